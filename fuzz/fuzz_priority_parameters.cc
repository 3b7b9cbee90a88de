// libFuzzer target: the PriorityParameters string and the other configuration
// text slurm.conf hands to gpufair.
//
// Input layout (so seeds stay readable text files):
//   line 1     PriorityParameters ("key=value,key=value")
//   line 2     TRESBillingWeights ("CPU=1.0,GRES/gpu:a100=2.0"), optional
// Checked on every input:
//   - parse_config() with default knobs and with Slurm's knobs set never
//     crashes; a rejection carries a non-empty message;
//   - parse_duration() on every value of the string: same rule;
//   - the C API's gpufair_config_check() agrees with parse_config() and fills
//     the caller's buffer with a message on rejection (truncated safely in a
//     small buffer);
//   - an accepted configuration can be described, builds an Engine, and the
//     engine can be reconfigured with it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "gpufair/c_api.h"
#include "gpufair/config.h"
#include "gpufair/engine.h"

namespace {

[[noreturn]] void fail(const char* what, std::string_view input) {
  std::fprintf(stderr, "fuzz_priority_parameters: %s\n  input: \"%.*s\"\n", what,
               static_cast<int>(input.size()), input.data());
  std::abort();
}

void check_config(std::string_view params, const gpufair::SlurmKnobs& knobs) {
  auto cfg = gpufair::parse_config(params, knobs);
  if (!cfg.ok()) {
    if (cfg.error().message.empty()) fail("parse_config rejected the input with an empty message", params);
    return;
  }
  std::string d = gpufair::describe(*cfg);
  if (d.empty()) fail("describe() of an accepted config is empty", params);
  gpufair::Engine engine(*cfg);
  engine.reconfigure(*cfg);
  (void)engine.config();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view all(reinterpret_cast<const char*>(data), size);
  std::string_view params = all, billing;
  bool has_billing = false;
  if (auto nl = all.find('\n'); nl != std::string_view::npos) {
    params = all.substr(0, nl);
    billing = all.substr(nl + 1);
    has_billing = true;
  }

  // Durations, as they appear as values ("half_life=7-0").
  {
    std::string_view rest = params;
    while (!rest.empty()) {
      auto comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      auto eq = item.find('=');
      std::string_view value = eq == std::string_view::npos ? item : item.substr(eq + 1);
      auto d = gpufair::parse_duration(value);
      if (!d.ok() && d.error().message.empty()) fail("parse_duration rejected a value with an empty message", value);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }

  gpufair::SlurmKnobs defaults;
  check_config(params, defaults);

  gpufair::SlurmKnobs knobs;
  knobs.set = true;
  knobs.decay_half_life = 5 * 60;
  knobs.calc_period = 60;
  knobs.max_age = 60;
  knobs.weight_age = 1000;
  knobs.weight_fairshare = 10000;
  knobs.tres_billing_weights = has_billing ? std::string(billing) : "CPU=1.0,GRES/gpu=1.0";
  check_config(params, knobs);

  // The C boundary: NUL-terminated copies (an embedded NUL ends the string there).
  std::string cparams(params);
  std::string cbilling(knobs.tres_billing_weights);
  gpufair_knobs_t ck{};
  ck.decay_half_life_s = knobs.decay_half_life;
  ck.calc_period_s = knobs.calc_period;
  ck.max_age_s = knobs.max_age;
  ck.weight_age = knobs.weight_age;
  ck.weight_fairshare = knobs.weight_fairshare;
  ck.tres_billing_weights = cbilling.c_str();
  ck.knobs_set = 1;
  char err[512];
  err[0] = '\0';
  int rc = gpufair_config_check(cparams.c_str(), &ck, err, sizeof err);
  if (rc != GPUFAIR_OK) {
    if (rc != GPUFAIR_ERR_CONFIG) fail("gpufair_config_check returned neither OK nor ERR_CONFIG", params);
    if (err[0] == '\0') fail("gpufair_config_check rejected the input with an empty message", params);
    if (std::memchr(err, '\0', sizeof err) == nullptr) fail("error message not NUL-terminated", params);
  }
  // Same verdict as the C++ parser on the same (NUL-cut) text.
  gpufair::SlurmKnobs cut = knobs;
  cut.tres_billing_weights = std::string(cbilling.c_str());
  bool cpp_ok = gpufair::parse_config(std::string_view(cparams.c_str()), cut).ok();
  if (cpp_ok != (rc == GPUFAIR_OK)) fail("gpufair_config_check and parse_config disagree", params);

  // A tiny buffer must still get a NUL-terminated (truncated) message.
  char tiny[8];
  std::memset(tiny, 'x', sizeof tiny);
  rc = gpufair_config_check(cparams.c_str(), &ck, tiny, sizeof tiny);
  if (rc != GPUFAIR_OK && std::memchr(tiny, '\0', sizeof tiny) == nullptr)
    fail("a message in an 8-byte buffer is not NUL-terminated", params);
  return 0;
}
