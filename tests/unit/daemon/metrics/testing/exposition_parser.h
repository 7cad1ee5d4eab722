// A strict reader of Prometheus text format 0.0.4 for tests: it parses what the exporter
// serves back into samples, and fails on anything a Prometheus server would reject (bad
// escapes, samples before their TYPE line, a family split in two), so the tests check the
// format and not only substrings.
#pragma once

#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace vgpu::metrics::testing {

struct ParsedSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct ParsedExposition {
  std::map<std::string, std::string> types;  // family -> counter/gauge/...
  std::map<std::string, std::string> helps;
  std::vector<ParsedSample> samples;

  // Samples of `name` whose labels include every pair of `match`.
  std::vector<ParsedSample> Find(const std::string& name,
                                 const std::map<std::string, std::string>& match = {}) const {
    std::vector<ParsedSample> out;
    for (const ParsedSample& s : samples) {
      if (s.name != name) continue;
      bool ok = true;
      for (const auto& [k, v] : match) {
        auto it = s.labels.find(k);
        if (it == s.labels.end() || it->second != v) ok = false;
      }
      if (ok) out.push_back(s);
    }
    return out;
  }
  std::optional<double> Value(const std::string& name,
                              const std::map<std::string, std::string>& match = {}) const {
    auto found = Find(name, match);
    if (found.size() != 1) return std::nullopt;
    return found[0].value;
  }
};

inline bool ParseExposition(const std::string& text, ParsedExposition* out, std::string* error) {
  std::istringstream in(text);
  std::string line;
  std::string current_family;
  std::set<std::string> closed_families;
  int lineno = 0;
  auto fail = [&](const std::string& why) {
    *error = "line " + std::to_string(lineno) + ": " + why + ": " + line;
    return false;
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      const bool is_type = line[2] == 'T';
      std::string rest = line.substr(7);
      auto sp = rest.find(' ');
      if (sp == std::string::npos) return fail("HELP/TYPE without text");
      std::string family = rest.substr(0, sp);
      if (family != current_family) {
        if (!current_family.empty()) closed_families.insert(current_family);
        if (closed_families.count(family)) return fail("family split in two");
        current_family = family;
      }
      if (is_type) {
        std::string type = rest.substr(sp + 1);
        if (type != "counter" && type != "gauge" && type != "histogram" && type != "summary" &&
            type != "untyped")
          return fail("unknown type");
        if (out->types.count(family)) return fail("second TYPE line");
        out->types[family] = type;
      } else {
        out->helps[family] = rest.substr(sp + 1);
      }
      continue;
    }
    if (line[0] == '#') continue;
    ParsedSample s;
    size_t i = 0;
    while (i < line.size() &&
           (isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' || line[i] == ':'))
      ++i;
    s.name = line.substr(0, i);
    if (s.name.empty()) return fail("no metric name");
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        size_t eq = line.find('=', i);
        if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"')
          return fail("bad label");
        std::string key = line.substr(i, eq - i);
        std::string value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\') {
            if (++j >= line.size()) return fail("escape at end");
            if (line[j] == 'n')
              value += '\n';
            else if (line[j] == '\\' || line[j] == '"')
              value += line[j];
            else
              return fail("bad escape");
          } else {
            value += line[j];
          }
        }
        if (j >= line.size()) return fail("unterminated label value");
        if (s.labels.count(key)) return fail("duplicate label");
        s.labels[key] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size()) return fail("unterminated label set");
      ++i;
    }
    if (i >= line.size() || line[i] != ' ') return fail("no value");
    std::string value = line.substr(i + 1);
    if (value == "+Inf")
      s.value = std::numeric_limits<double>::infinity();
    else if (value == "NaN")
      s.value = std::numeric_limits<double>::quiet_NaN();
    else {
      char* end = nullptr;
      s.value = std::strtod(value.c_str(), &end);
      if (end == value.c_str() || *end != '\0') return fail("bad value");
    }
    if (s.name != current_family) return fail("sample outside its family (no TYPE before it)");
    out->samples.push_back(std::move(s));
  }
  return true;
}

}  // namespace vgpu::metrics::testing
