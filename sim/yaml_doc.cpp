#include "yaml_doc.h"

#include <yaml.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "job_spec.h"

namespace gpufair::sim {

YamlNode::YamlNode() = default;
YamlNode::YamlNode(const YamlNode&) = default;
YamlNode::YamlNode(YamlNode&&) noexcept = default;
YamlNode& YamlNode::operator=(const YamlNode&) = default;
YamlNode& YamlNode::operator=(YamlNode&&) noexcept = default;
YamlNode::~YamlNode() = default;

namespace {

class Parser {
 public:
  Parser(const std::string& text, std::string name) : name_(std::move(name)) {
    yaml_parser_initialize(&parser_);
    yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  }
  ~Parser() {
    if (have_event_) yaml_event_delete(&event_);
    yaml_parser_delete(&parser_);
  }
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  YamlNode parse_document() {
    expect(YAML_STREAM_START_EVENT);
    next();
    if (event_.type == YAML_STREAM_END_EVENT) fail(1, "empty file, expected a YAML mapping");
    if (event_.type != YAML_DOCUMENT_START_EVENT) fail(line(), "expected a document");
    next();
    YamlNode root = parse_node(0);
    return root;
  }

 private:
  [[noreturn]] void fail(int line, const std::string& why) {
    throw SourceError{name_ + ":" + std::to_string(line) + ": " + why};
  }
  int line() const { return static_cast<int>(event_.start_mark.line) + 1; }

  void next() {
    if (have_event_) yaml_event_delete(&event_);
    have_event_ = false;
    if (!yaml_parser_parse(&parser_, &event_)) {
      const int l = static_cast<int>(parser_.problem_mark.line) + 1;
      fail(l, std::string("YAML syntax error: ") + (parser_.problem ? parser_.problem : "unknown") +
                  (parser_.context ? std::string(" ") + parser_.context : std::string()));
    }
    have_event_ = true;
  }
  void expect(yaml_event_type_t type) {
    next();
    if (event_.type != type) fail(line(), "unexpected YAML structure");
  }

  YamlNode parse_node(int depth) {
    if (depth > 64) fail(line(), "nesting deeper than 64 levels");
    YamlNode node;
    node.line = line();
    switch (event_.type) {
      case YAML_SCALAR_EVENT:
        node.kind = YamlNode::Kind::kScalar;
        node.scalar.assign(reinterpret_cast<const char*>(event_.data.scalar.value), event_.data.scalar.length);
        if (event_.data.scalar.length == 0 && event_.data.scalar.plain_implicit) node.kind = YamlNode::Kind::kNull;
        next();
        return node;
      case YAML_SEQUENCE_START_EVENT:
        node.kind = YamlNode::Kind::kSequence;
        next();
        while (event_.type != YAML_SEQUENCE_END_EVENT) node.items.push_back(parse_node(depth + 1));
        next();
        return node;
      case YAML_MAPPING_START_EVENT:
        node.kind = YamlNode::Kind::kMapping;
        next();
        while (event_.type != YAML_MAPPING_END_EVENT) {
          if (event_.type != YAML_SCALAR_EVENT) fail(line(), "mapping keys must be plain scalars");
          std::string key(reinterpret_cast<const char*>(event_.data.scalar.value), event_.data.scalar.length);
          const int key_line = line();
          if (node.find(key)) fail(key_line, "duplicate key '" + key + "'");
          next();
          node.fields.emplace_back(std::move(key), parse_node(depth + 1));
        }
        next();
        return node;
      case YAML_ALIAS_EVENT:
        fail(line(), "YAML aliases are not supported in scenarios");
      default:
        fail(line(), "unexpected YAML structure");
    }
  }

  std::string name_;
  yaml_parser_t parser_;
  yaml_event_t event_{};
  bool have_event_ = false;
};

}  // namespace

YamlNode load_yaml_string(const std::string& text, const std::string& name) {
  Parser p(text, name);
  return p.parse_document();
}

YamlNode load_yaml_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw SourceError{path + ": cannot open: " + std::strerror(errno)};
  std::stringstream ss;
  ss << in.rdbuf();
  return load_yaml_string(ss.str(), path);
}

}  // namespace gpufair::sim
