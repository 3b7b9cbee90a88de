// A YAML file loaded into a small tree (via libyaml) that remembers where each
// node came from, so every scenario error can say file:line.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace gpufair::sim {

struct YamlNode {
  enum class Kind { kNull, kScalar, kSequence, kMapping };
  Kind kind = Kind::kNull;
  std::string scalar;
  std::vector<YamlNode> items;                          // sequence
  std::vector<std::pair<std::string, YamlNode>> fields; // mapping, in file order
  int line = 0;                                         // 1-based

  // Out of line (yaml_doc.cpp): std::pair<std::string, YamlNode> must not be
  // instantiated while YamlNode is incomplete (clang with libstdc++ rejects it).
  YamlNode();
  YamlNode(const YamlNode&);
  YamlNode(YamlNode&&) noexcept;
  YamlNode& operator=(const YamlNode&);
  YamlNode& operator=(YamlNode&&) noexcept;
  ~YamlNode();

  const YamlNode* find(const std::string& key) const {
    for (const auto& [k, v] : fields)
      if (k == key) return &v;
    return nullptr;
  }
  bool is_scalar() const { return kind == Kind::kScalar; }
  bool is_map() const { return kind == Kind::kMapping; }
  bool is_seq() const { return kind == Kind::kSequence; }
};

// Throws SourceError("file:line: reason") on a syntax error, an empty file,
// anchors/aliases (not supported), or a non-scalar mapping key.
YamlNode load_yaml_file(const std::string& path);
YamlNode load_yaml_string(const std::string& text, const std::string& name);

}  // namespace gpufair::sim
