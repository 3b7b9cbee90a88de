// Writes valid state files produced by the engine itself, as seeds for
// fuzz_state:  make_state_seeds <dir>
//   empty.state    a fresh engine
//   small.state    two teams, one running job, one cycle
//   rich.state     five teams (sub-accounts rolled up), users and
//                  sub-accounts inside them with their own usage and shares
//                  (one fairshare=parent, one gone), running and ended jobs,
//                  honest and bait in-team preemptions, penalties, several
//                  decayed cycles
#include <cstdio>
#include <string>
#include <vector>

#include "gpufair/config.h"
#include "gpufair/engine.h"

namespace {

bool write(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

gpufair::JobRef job(gpufair::JobId id, gpufair::TeamId team, int rank, double gpus,
                    gpufair::TimePoint submit, gpufair::TimePoint start) {
  gpufair::JobRef j;
  j.id = id;
  j.team = team;
  j.user = 1000 + static_cast<std::uint32_t>(team);
  j.rank = rank;
  j.gpus = gpus;
  j.submit = submit;
  j.start = start;
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <dir>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  auto cfg = gpufair::parse_config("half_life=1h,penalty_half_life=2h,bait_window=3h");
  if (!cfg.ok()) {
    std::fprintf(stderr, "config: %s\n", cfg.error().message.c_str());
    return 1;
  }

  {
    gpufair::Engine e(*cfg);
    if (!write(dir + "/empty.state", e.save_state())) return 1;
  }
  {
    gpufair::Engine e(*cfg);
    auto a = e.team_for_account("teama");
    auto b = e.team_for_account("teamb");
    e.set_shares(a, 100);
    e.set_shares(b, 50);
    e.set_cluster_gpus(32);
    e.begin_cycle(1'700'000'000);
    e.observe_running(job(1, a, 10, 4, 1'699'999'000, 1'699'999'500), 1'700'000'000);
    e.observe_pending(job(2, b, 10, 1, 1'699'999'900, 0));
    e.end_cycle(1'700'000'000);
    if (!write(dir + "/small.state", e.save_state())) return 1;
  }
  {
    gpufair::Engine e(*cfg);
    const char* accounts[] = {"teama", "teama/nlp", "teamb", "teamc/vision/interns", "teamd", "teame"};
    std::vector<gpufair::TeamId> t;
    for (const char* acc : accounts) t.push_back(e.team_for_account(acc));
    for (std::size_t i = 0; i < t.size(); ++i) e.set_shares(t[i], 10.0 * (i + 1));
    // Two users per account; user 0 of teama/nlp with fairshare=parent.
    std::vector<gpufair::AssocId> user(t.size() * 2);
    for (std::size_t i = 0; i < t.size(); ++i)
      for (std::size_t u = 0; u < 2; ++u) {
        user[2 * i + u] = e.assoc_for(accounts[i], "user" + std::to_string(u));
        e.set_assoc_shares(user[2 * i + u], i == 1 && u == 0 ? -1.0 : 1.0 + static_cast<double>(u));
      }
    e.assocs_refreshed();
    e.set_cluster_gpus(32);
    gpufair::TimePoint now = 1'700'000'000;
    gpufair::JobId next = 100;
    for (int cycle = 0; cycle < 12; ++cycle, now += 300) {
      e.begin_cycle(now);
      for (std::size_t i = 0; i < t.size(); ++i) {
        auto running = job(next + i, t[i], 0, 1.0 + i, now - 2000, now - 1000 + cycle);
        running.assoc = user[2 * i + static_cast<std::size_t>(cycle) % 2];
        e.observe_running(running, now);
        e.observe_pending(job(5000 + next + i, t[(i + 1) % t.size()], 10, 2, now - 7200, 0));
      }
      e.end_cycle(now);
      if (cycle == 6) {  // teame's user1 is deleted: the host names every other association
        for (std::size_t k = 0; k + 1 < user.size(); ++k) e.assoc_for(accounts[k / 2], "user" + std::to_string(k % 2));
        for (const char* acc : accounts)
          for (std::string p = acc; !p.empty(); p = p.substr(0, p.rfind('/') == std::string::npos ? 0 : p.rfind('/')))
            e.assoc_for(p, "");
        e.assocs_refreshed();
      }
      if (cycle % 3 == 2) e.job_ended(next, now + 10);
      next += 10;
    }
    // Honest: a long-running low-rank job displaced late by an urgent one.
    (void)e.record_preemption(job(9001, t[2], 100, 4, now - 60, 0),
                              job(9002, t[2], 0, 4, now - 20000, now - 15000), now);
    // Bait: team d keeps supplying young low-rank victims while others wait.
    for (int k = 0; k < 4; ++k) {
      gpufair::TimePoint when = now + 60 * k;
      (void)e.record_preemption(job(9100 + k, t[4], 100, 8, when - 10, 0),
                                job(9200 + k, t[4], 0, 8, when - 600, when - 300), when);
    }
    e.begin_cycle(now + 600);
    e.end_cycle(now + 600);
    if (!write(dir + "/rich.state", e.save_state())) return 1;
  }
  return 0;
}
