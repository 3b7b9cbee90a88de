// slurm-conf-examples/gpufair.conf stays true: its PriorityParameters line
// is accepted by the core, and it documents every key the core accepts with
// the core's own default.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "gpufair/config.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: conf_example_test gpufair.conf\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  int failures = 0;
  if (text.empty()) {
    std::fprintf(stderr, "FAIL: cannot read %s\n", argv[1]);
    return 1;
  }
  std::istringstream lines(text);
  std::string line, params;
  bool found = false;
  while (std::getline(lines, line))
    if (line.rfind("PriorityParameters=", 0) == 0) {
      params = line.substr(std::string("PriorityParameters=").size());
      found = true;
    }
  if (!found) {
    std::fprintf(stderr, "FAIL: no active PriorityParameters= line\n");
    failures++;
  } else if (auto c = gpufair::parse_config(params); !c.ok()) {
    std::fprintf(stderr, "FAIL: PriorityParameters=%s rejected: %s\n", params.c_str(),
                 c.error().message.c_str());
    failures++;
  }
  for (const auto& k : gpufair::config_keys()) {
    std::string dflt = k.default_value.empty() ? "(empty)" : k.default_value;
    // "#   <key> <spaces> default <value>"
    auto pos = text.find("#   " + k.key + " ");
    if (pos == std::string::npos ||
        text.substr(pos, text.find('\n', pos) - pos).find("default " + dflt) == std::string::npos) {
      std::fprintf(stderr, "FAIL: key %s (default %s) not documented\n", k.key.c_str(), dflt.c_str());
      failures++;
    }
  }
  if (!failures) std::printf("OK: %s documents all %zu keys\n", argv[1], gpufair::config_keys().size());
  return failures ? 1 : 0;
}
