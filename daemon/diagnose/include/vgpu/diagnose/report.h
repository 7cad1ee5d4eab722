// A diagnose report: named sections of key/value rows, some marked as problems. Rendered as an
// aligned table for people and as JSON (--json) for tools.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace vgpu::diagnose {

struct ReportRow {
  std::string key;
  std::string value;
  bool problem = false;  // something an operator must fix; the table marks it "!"
};

struct ReportSection {
  std::string name;
  std::vector<ReportRow> rows;
  void Add(std::string key, std::string value, bool problem = false) {
    rows.push_back({std::move(key), std::move(value), problem});
  }
};

struct Report {
  std::deque<ReportSection> sections;  // a deque: Section()'s references stay valid
  ReportSection& Section(const std::string& name);
  // {"<section>": {"<key>": "<value>", ...}, ..., "problems": ["<section>: <key>: <value>"]}
  nlohmann::json ToJson() const;
  std::string ToTable() const;
  std::vector<std::string> Problems() const;
};

}  // namespace vgpu::diagnose
