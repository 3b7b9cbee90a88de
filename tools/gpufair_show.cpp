// gpufair-show: what gpufair knows, read from its state file.
//
//   gpufair-show [--json] [--decisions N] [--now EPOCH] [--conf SLURM_CONF]
//                [--params PRIORITY_PARAMETERS] [STATE_FILE]
//
// Per team: decayed GPU-hours, shares, fair-share factor (classic and with
// the bait penalty), penalty, and the last bait decisions with their
// reasons; per association inside a team (users, sub-accounts): its own
// decayed GPU-hours, its factor inside the team (Fair Tree, or classic with
// PriorityFlags=NO_FAIR_TREE in slurm.conf) and its jobs' fair share. Without STATE_FILE the path comes from slurm.conf ($SLURM_CONF or
// /etc/slurm/slurm.conf): PriorityParameters state_file=, else
// <StateSaveLocation>/gpufair.state. The same file priority/gpufair writes;
// reading it never changes it. Builds and runs without Slurm.
//
// Shares are those of the last cycle that saved the state (slurmctld
// refreshes them from the associations every cycle); `sshare -l` shows the
// live values. Usage is decayed to --now (default: the current time).
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "gpufair/config.h"
#include "gpufair/engine.h"

namespace {

struct Options {
  bool json = false;
  int decisions = 5;
  std::int64_t now = 0;
  std::string conf, params, state;
  bool params_given = false;
};

[[noreturn]] void usage(int rc) {
  std::fprintf(rc ? stderr : stdout,
               "usage: gpufair-show [--json] [--decisions N] [--now EPOCH] [--conf SLURM_CONF]\n"
               "                    [--params PRIORITY_PARAMETERS] [STATE_FILE]\n"
               "Prints, per team, decayed GPU-hours, shares, fair-share factor, bait penalty\n"
               "and the last bait decisions (with reasons) from gpufair's state file.\n");
  std::exit(rc);
}

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  s.erase(0, s.find_first_not_of(ws));
  auto e = s.find_last_not_of(ws);
  s.erase(e == std::string::npos ? 0 : e + 1);
  return s;
}

// The few slurm.conf keys we need (case-insensitive keys, comments dropped).
struct SlurmConf {
  std::string state_save_location, priority_parameters, decay_half_life, priority_flags;
};

SlurmConf read_slurm_conf(const std::string& path) {
  SlurmConf c;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    for (auto& ch : key) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (key == "statesavelocation") c.state_save_location = value;
    else if (key == "priorityparameters") c.priority_parameters = value;
    else if (key == "prioritydecayhalflife") c.decay_half_life = value;
    else if (key == "priorityflags") {
      for (auto& ch : value) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      c.priority_flags = value;
    }
  }
  return c;
}

// slurm.conf durations are minutes when bare ("5" = 5 minutes), else
// Slurm's d-h:m:s forms.
bool slurm_minutes(const std::string& text, gpufair::Seconds* out) {
  if (text.empty()) return false;
  if (text.find_first_not_of("0123456789") == std::string::npos) {
    *out = std::strtoll(text.c_str(), nullptr, 10) * 60;
    return true;
  }
  auto r = gpufair::parse_duration(text);
  if (!r.ok()) return false;
  *out = r.value();
  return true;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (unsigned char ch : s) {
    switch (ch) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (ch < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", ch);
          o += b;
        } else {
          o += static_cast<char>(ch);
        }
    }
  }
  return o;
}

std::string num(double v) {
  if (v != v) return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string when(std::int64_t t) {
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  char b[32];
  if (!gmtime_r(&tt, &tm) || !std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm)) return "?";
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto need = [&](const char* what) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gpufair-show: %s needs a value\n", what);
        usage(2);
      }
      return argv[++i];
    };
    if (a == "--json") o.json = true;
    else if (a == "--decisions") {
      std::string v = need("--decisions");
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (!*v.c_str() || *end || n < 0 || n > 100000) {
        std::fprintf(stderr, "gpufair-show: --decisions '%s': expected a count 0..100000\n", v.c_str());
        return 2;
      }
      o.decisions = static_cast<int>(n);
    } else if (a == "--now") {
      std::string v = need("--now");
      char* end = nullptr;
      long long n = std::strtoll(v.c_str(), &end, 10);
      if (!*v.c_str() || *end || n < 0) {
        std::fprintf(stderr, "gpufair-show: --now '%s': expected seconds since the epoch\n", v.c_str());
        return 2;
      }
      o.now = n;
    } else if (a == "--conf") o.conf = need("--conf");
    else if (a == "--params") { o.params = need("--params"); o.params_given = true; }
    else if (a == "-h" || a == "--help") usage(0);
    else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "gpufair-show: unknown option %s\n", a.c_str());
      usage(2);
    } else if (o.state.empty()) o.state = a;
    else {
      std::fprintf(stderr, "gpufair-show: only one state file, got '%s' too\n", a.c_str());
      return 2;
    }
  }

  // Configuration: slurm.conf when there is one, --params wins.
  if (o.conf.empty()) {
    const char* env = std::getenv("SLURM_CONF");
    o.conf = env && *env ? env : "/etc/slurm/slurm.conf";
  }
  SlurmConf sc = read_slurm_conf(o.conf);
  std::string params = o.params_given ? o.params : sc.priority_parameters;
  gpufair::SlurmKnobs knobs;
  gpufair::Seconds hl = 0;
  if (slurm_minutes(sc.decay_half_life, &hl)) {
    knobs.set = true;
    knobs.decay_half_life = hl;
  }
  // Fair share inside a team, as slurm.conf's read_config.c decides it.
  if (sc.priority_flags.find("DEPTH_OBLIVIOUS") != std::string::npos)
    knobs.in_team = gpufair::InTeamAlgo::kDepthOblivious;
  else if (sc.priority_flags.find("NO_FAIR_TREE") != std::string::npos)
    knobs.in_team = gpufair::InTeamAlgo::kClassic;
  if (knobs.in_team != gpufair::InTeamAlgo::kFairTree) knobs.set = true;
  auto cfg = gpufair::parse_config(params, knobs);
  if (!cfg.ok()) {
    std::fprintf(stderr, "gpufair-show: PriorityParameters '%s': %s\n", params.c_str(),
                 cfg.error().message.c_str());
    return 2;
  }
  if (o.state.empty()) {
    if (!cfg.value().state_file.empty()) o.state = cfg.value().state_file;
    else
      o.state = (sc.state_save_location.empty() ? std::string("/var/spool/slurmctld")
                                                : sc.state_save_location) +
                "/gpufair.state";
  }

  std::ifstream in(o.state, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "gpufair-show: cannot open state file %s: %s\n", o.state.c_str(),
                 std::strerror(errno));
    return 1;
  }
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  gpufair::Engine engine(cfg.value());
  auto loaded = engine.load_state(bytes);
  if (!loaded.ok()) {
    std::fprintf(stderr, "gpufair-show: %s: %s\n", o.state.c_str(), loaded.error().message.c_str());
    return 1;
  }
  std::int64_t now = o.now ? o.now : static_cast<std::int64_t>(std::time(nullptr));
  auto teams = engine.report(now);
  auto assocs = engine.assoc_reports(now);
  auto team_name = [&](gpufair::TeamId t) {
    return t >= 0 && static_cast<std::size_t>(t) < teams.size() ? teams[static_cast<std::size_t>(t)].name
                                                                 : std::string("?");
  };

  if (o.json) {
    std::ostringstream j;
    j << "{\"state_file\":\"" << json_escape(o.state) << "\",\"now\":" << now << ",\"teams\":[";
    for (std::size_t t = 0; t < teams.size(); t++) {
      const auto& r = teams[t];
      j << (t ? "," : "") << "{\"name\":\"" << json_escape(r.name) << "\""
        << ",\"gpu_hours\":" << num(r.usage_gpu_s / 3600.0)
        << ",\"raw_gpu_hours\":" << num(r.raw_usage_gpu_s / 3600.0)
        << ",\"shares\":" << num(r.shares) << ",\"shares_norm\":" << num(r.shares_norm)
        << ",\"usage_norm\":" << num(r.usage_norm) << ",\"fairshare\":" << num(r.fairshare)
        << ",\"effective_fairshare\":" << num(r.effective_fairshare)
        << ",\"penalty\":" << num(r.penalty) << ",\"bait_detections\":" << r.bait_detections
        << ",\"in_team_preemptions\":" << r.in_team_preemptions
        << ",\"jump_price_gpu_hours\":" << num(r.price_total_gpu_s / 3600.0)
        << ",\"priced_jumps\":" << r.priced_jumps << ",\"reclaims_made\":" << r.reclaims_made
        << ",\"reclaimed_from\":" << r.reclaimed_from << ",\"held_gpus\":" << num(r.held_gpus)
        << ",\"entitled_gpus\":" << num(r.entitled_gpus)
        << ",\"scavenger_since\":" << r.scavenger_since << ",\"scavenger_until\":" << r.scavenger_until
        << ",\"recent_jump_price_gpu_s\":" << num(r.recent_jump_price_gpu_s)
        << ",\"jumped_lately\":" << (r.jumped_lately ? "true" : "false") << ",\"decisions\":[";
      std::size_t first = r.recent.size() > static_cast<std::size_t>(o.decisions)
                              ? r.recent.size() - o.decisions : 0;
      for (std::size_t d = first; d < r.recent.size(); d++) {
        const auto& b = r.recent[d];
        j << (d > first ? "," : "") << "{\"when\":" << b.when << ",\"preemptor\":" << b.preemptor
          << ",\"victim\":" << b.victim << ",\"in_team\":" << (b.in_team ? "true" : "false")
          << ",\"bait\":" << (b.bait ? "true" : "false") << ",\"reclaim\":" << (b.reclaim ? "true" : "false")
          << ",\"reservation\":" << (b.reservation ? "true" : "false")
          << ",\"score\":" << num(b.score)
          << ",\"skipped_s\":" << b.skipped << ",\"charged_gpu_s\":" << num(b.charged_gpu_s)
          << ",\"penalty_added\":" << num(b.penalty_added) << ",\"reason\":\""
          << json_escape(b.reason) << "\"}";
      }
      j << "]}";
    }
    j << "],\"assocs\":[";
    for (std::size_t a = 0; a < assocs.size(); a++) {
      const auto& r = assocs[a];
      j << (a ? "," : "") << "{\"team\":\"" << json_escape(team_name(r.team)) << "\""
        << ",\"account\":\"" << json_escape(r.account) << "\",\"user\":\"" << json_escape(r.user) << "\""
        << ",\"is_team\":" << (r.parent < 0 ? "true" : "false") << ",\"live\":" << (r.live ? "true" : "false")
        << ",\"shares\":" << num(r.shares) << ",\"gpu_hours\":" << num(r.usage_gpu_s / 3600.0)
        << ",\"raw_gpu_hours\":" << num(r.raw_usage_gpu_s / 3600.0)
        << ",\"shares_norm\":" << num(r.shares_norm) << ",\"usage_efctv\":" << num(r.usage_efctv)
        << ",\"level_fs\":" << (std::isinf(r.level_fs) ? std::string("\"inf\"") : num(r.level_fs))
        << ",\"in_team\":" << num(r.in_team) << ",\"fairshare\":" << num(r.fairshare) << "}";
    }
    j << "]}\n";
    std::cout << j.str();
    return 0;
  }

  std::printf("gpufair state %s at %s (%zu teams)\n", o.state.c_str(), when(now).c_str(),
              teams.size());
  std::printf("%-20s %12s %8s %9s %9s %9s %8s %6s %9s %11s %8s %8s\n", "TEAM", "GPU-HOURS", "SHARES",
              "NORMUSE", "FAIRSHARE", "EFFECTIVE", "PENALTY", "BAIT", "PREEMPTS", "JUMP-PRICE", "RECLAIM+",
              "RECLAIM-");
  for (const auto& r : teams)
    std::printf("%-20s %12.3f %8.3f %9.4f %9.4f %9.4f %8.3f %6u %9u %9.3f h %8u %8u\n", r.name.c_str(),
                r.usage_gpu_s / 3600.0, r.shares, r.usage_norm, r.fairshare,
                r.effective_fairshare, r.penalty, r.bait_detections, r.in_team_preemptions,
                r.price_total_gpu_s / 3600.0, r.reclaims_made, r.reclaimed_from);
  if (!assocs.empty()) {
    std::printf("\nInside the teams (%s; a team's own account shows the team):\n",
                cfg.value().in_team == gpufair::InTeamAlgo::kFairTree ? "Fair Tree"
                : cfg.value().in_team == gpufair::InTeamAlgo::kClassic ? "classic fair share"
                                                                       : "depth-oblivious fair share");
    std::printf("%-20s %-28s %-12s %12s %8s %9s %9s\n", "TEAM", "ACCOUNT", "USER", "GPU-HOURS", "SHARES",
                "IN-TEAM", "FAIRSHARE");
    for (const auto& r : assocs)
      std::printf("%-20s %-28s %-12s %12.3f %8.3f %9.4f %9.4f%s\n", team_name(r.team).c_str(), r.account.c_str(),
                  r.user.c_str(), r.usage_gpu_s / 3600.0, r.shares, r.in_team, r.fairshare,
                  r.live ? "" : " (gone)");
  }
  for (const auto& r : teams)
    if (r.scavenger_until > 0)
      std::printf("%s preempted its own jobs: its lower-rank jobs started since %s are scavengers "
                  "(any other team may requeue them) until %s\n",
                  r.name.c_str(), when(r.scavenger_since).c_str(), when(r.scavenger_until).c_str());
  if (cfg.value().jump.reclaim == gpufair::Reclaim::kJumpers)
    for (const auto& r : teams)
      if (r.jumped_lately)
        std::printf("%s jumped the queue lately (recent jump prices %.0f GPU-s, penalty %.3f): while it holds "
                    "more than its entitlement, a team below its own may reclaim its jobs (reclaim=jumpers)\n",
                    r.name.c_str(), r.recent_jump_price_gpu_s, r.penalty);
  bool any = false;
  for (const auto& r : teams) {
    std::size_t first = r.recent.size() > static_cast<std::size_t>(o.decisions)
                            ? r.recent.size() - o.decisions : 0;
    for (std::size_t d = first; d < r.recent.size(); d++) {
      const auto& b = r.recent[d];
      if (!any) std::printf("\nLast decisions (newest last, up to %d per team):\n", o.decisions);
      any = true;
      std::printf("  %s %-12s job %llu preempted job %llu: %s score=%.3f skipped=%llds penalty+%.3f price=%.0f GPU-s\n      %s\n",
                  when(b.when).c_str(), r.name.c_str(),
                  static_cast<unsigned long long>(b.preemptor),
                  static_cast<unsigned long long>(b.victim),
                  b.reservation ? "RESERVATION" : b.reclaim ? "RECLAIM" : b.bait ? "BAIT" : "honest", b.score,
                  static_cast<long long>(b.skipped), b.penalty_added, b.charged_gpu_s,
                  b.reason.c_str());
    }
  }
  if (!any) std::printf("\nNo preemption decisions recorded.\n");
  return 0;
}
