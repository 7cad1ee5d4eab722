#include "vgpu/diagnose/report.h"

#include <algorithm>

namespace vgpu::diagnose {

ReportSection& Report::Section(const std::string& name) {
  for (auto& s : sections) {
    if (s.name == name) {
      return s;
    }
  }
  sections.push_back({name, {}});
  return sections.back();
}

std::vector<std::string> Report::Problems() const {
  std::vector<std::string> out;
  for (const auto& s : sections) {
    for (const auto& r : s.rows) {
      if (r.problem) {
        out.push_back(s.name + ": " + r.key + ": " + r.value);
      }
    }
  }
  return out;
}

nlohmann::json Report::ToJson() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& s : sections) {
    nlohmann::json& o = j[s.name] = nlohmann::json::object();
    for (const auto& r : s.rows) {
      o[r.key] = r.value;
    }
  }
  j["problems"] = Problems();
  return j;
}

std::string Report::ToTable() const {
  size_t width = 0;
  for (const auto& s : sections) {
    for (const auto& r : s.rows) {
      width = std::max(width, r.key.size());
    }
  }
  std::string out;
  for (const auto& s : sections) {
    out += s.name + "\n";
    for (const auto& r : s.rows) {
      out += (r.problem ? "! " : "  ") + r.key + std::string(width - r.key.size() + 2, ' ') +
             r.value + "\n";
    }
  }
  const auto problems = Problems();
  out += problems.empty() ? "no problems found\n"
                          : std::to_string(problems.size()) + " problem(s), marked !\n";
  return out;
}

}  // namespace vgpu::diagnose
