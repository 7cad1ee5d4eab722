#include "vgpu/volumes/volume_config.h"

#include <fnmatch.h>

#include <nlohmann/json.hpp>

#include "vgpu/text.h"

namespace vgpu::volumes {
namespace {

using nlohmann::json;

Status Field(const json& obj, const std::string& where, const char* key, std::string* out,
             bool required) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    return required ? InvalidArgumentError("--volume-config: " + where + "." + key + ": missing")
                    : OkStatus();
  }
  if (!it->is_string()) {
    return InvalidArgumentError("--volume-config: " + where + "." + key + ": not a string");
  }
  *out = it->get<std::string>();
  return OkStatus();
}

Status StringList(const json& obj, const std::string& where, const char* key,
                  std::vector<std::string>* out) {
  auto it = obj.find(key);
  if (it == obj.end()) return OkStatus();
  if (!it->is_array()) {
    return InvalidArgumentError("--volume-config: " + where + "." + key + ": not a list");
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const json& v = (*it)[i];
    if (!v.is_string() || v.get<std::string>().empty() ||
        v.get<std::string>().find('/') != std::string::npos) {
      return InvalidArgumentError("--volume-config: " + where + "." + key + "[" +
                                  std::to_string(i) + "]: not a plain file name");
    }
    out->push_back(v.get<std::string>());
  }
  return OkStatus();
}

}  // namespace

Result<VolumeConfig> ParseVolumeConfig(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgumentError("--volume-config: not valid JSON");
  if (!doc.is_object() || !doc.contains("volume") || !doc["volume"].is_array()) {
    return InvalidArgumentError("--volume-config: expected {\"volume\": [...]}");
  }
  VolumeConfig config;
  for (size_t i = 0; i < doc["volume"].size(); ++i) {
    const json& v = doc["volume"][i];
    const std::string where = "volume[" + std::to_string(i) + "]";
    if (!v.is_object())
      return InvalidArgumentError("--volume-config: " + where + ": not an object");
    VolumeSpec spec;
    VGPU_RETURN_IF_ERROR(Field(v, where, "name", &spec.name, true));
    VGPU_RETURN_IF_ERROR(Field(v, where, "base", &spec.base, true));
    VGPU_RETURN_IF_ERROR(Field(v, where, "mode", &spec.mode, false));
    VGPU_RETURN_IF_ERROR(Field(v, where, "mount_path", &spec.mount_path, false));
    if (spec.name.empty() || spec.name.find('/') != std::string::npos || spec.name[0] == '.') {
      return InvalidArgumentError("--volume-config: " + where + ".name: not a plain name");
    }
    if (spec.base.empty() || spec.base[0] != '/') {
      return InvalidArgumentError("--volume-config: " + where + ".base: not an absolute path");
    }
    if (spec.mode != "ro" && spec.mode != "rw") {
      return InvalidArgumentError("--volume-config: " + where + ".mode: must be ro or rw");
    }
    if (spec.mount_path.empty()) spec.mount_path = "/usr/local/" + spec.name;
    if (auto c = v.find("components"); c != v.end()) {
      if (!c->is_object()) {
        return InvalidArgumentError("--volume-config: " + where + ".components: not an object");
      }
      VGPU_RETURN_IF_ERROR(StringList(*c, where + ".components", "binaries", &spec.binaries));
      VGPU_RETURN_IF_ERROR(StringList(*c, where + ".components", "libraries", &spec.libraries));
    }
    VGPU_RETURN_IF_ERROR(StringList(v, where, "blacklist", &spec.blacklist));
    if (auto s = v.find("cuda_shim"); s != v.end()) {
      if (!s->is_boolean()) {
        return InvalidArgumentError("--volume-config: " + where + ".cuda_shim: not a boolean");
      }
      spec.cuda_shim = s->get<bool>();
    }
    for (const VolumeSpec& other : config.volumes) {
      if (other.name == spec.name) {
        return InvalidArgumentError("--volume-config: " + where + ".name: duplicate '" + spec.name +
                                    "'");
      }
    }
    config.volumes.push_back(std::move(spec));
  }
  return config;
}

Result<VolumeConfig> LoadVolumeConfig(const std::string& path) {
  Result<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status().Annotate("--volume-config");
  Result<VolumeConfig> config = ParseVolumeConfig(*text);
  if (!config.ok()) return config.status().Annotate(path);
  return config;
}

bool LibraryItemMatches(std::string_view item, std::string_view cache_name) {
  if (cache_name.substr(0, item.size()) != item) return false;
  return cache_name.size() == item.size() || cache_name[item.size()] == '.';
}

bool Blacklisted(const VolumeSpec& spec, std::string_view name) {
  const std::string n(name);
  for (const std::string& pattern : spec.blacklist) {
    if (fnmatch(pattern.c_str(), n.c_str(), 0) == 0) return true;
  }
  return false;
}

}  // namespace vgpu::volumes
