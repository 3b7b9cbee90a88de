#include "counterfactual.h"

#include <algorithm>
#include <cstdio>

#include "report.h"
#include "text_util.h"

namespace gpufair::sim {

namespace {

double floored(double w) { return std::max(w, kWaitFloor); }

const TeamResult* find_team(const RunResult& r, const std::string& name) {
  for (const auto& t : r.teams)
    if (t.name == name) return &t;
  return nullptr;
}

double p(const std::vector<Seconds>& w, double q) { return w.empty() ? 0 : percentile(w, q); }

std::string num(double v, int digits = 3) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

std::optional<Counterfactual> compare_counterfactual(const RunResult& gaming, const RunResult& honest) {
  if (gaming.gaming_team.empty()) return std::nullopt;
  Counterfactual c;
  c.policy = gaming.policy;
  c.gaming_team = gaming.gaming_team;
  const double span = static_cast<double>(gaming.end - gaming.measure_from);
  c.over_entitlement_time = span > 0 ? gaming.over_entitlement_s / span : 0;
  for (const auto& g : gaming.teams) {
    const TeamResult* h = find_team(honest, g.name);
    TeamCounterfactual t;
    t.name = g.name;
    t.gaming = g.name == c.gaming_team;
    t.share = g.share;
    t.wait_p50_gaming = p(g.real_waits, 50);
    t.wait_p90_gaming = p(g.real_waits, 90);
    t.share_gaming = g.gpu_hour_share;
    if (h) {
      t.wait_p50_honest = p(h->real_waits, 50);
      t.wait_p90_honest = p(h->real_waits, 90);
      t.share_honest = h->gpu_hour_share;
    }
    if (t.gaming) {
      c.gamer_over_entitlement_gpu_hours = g.over_entitlement_gpu_s / 3600.0;
      t.ratio_p50 = floored(t.wait_p50_honest) / floored(t.wait_p50_gaming);
      t.ratio_p90 = floored(t.wait_p90_honest) / floored(t.wait_p90_gaming);
      c.gain_p50 = t.ratio_p50;
      c.gain_p90 = t.ratio_p90;
    } else {
      t.ratio_p50 = floored(t.wait_p50_gaming) / floored(t.wait_p50_honest);
      t.ratio_p90 = floored(t.wait_p90_gaming) / floored(t.wait_p90_honest);
      c.worst_harm_p50 = std::max(c.worst_harm_p50, t.ratio_p50);
      c.worst_harm_p90 = std::max(c.worst_harm_p90, t.ratio_p90);
    }
    c.teams.push_back(t);
  }
  // A team with no job in either run has ratio 1; worst_harm starts at 1 so
  // that "nobody was harmed" reads 1, never below.
  return c;
}

bool gaming_did_not_pay(const Counterfactual& c) {
  for (const auto& t : c.teams) {
    if (!t.gaming) continue;
    const bool p50 = t.wait_p50_gaming >= 0.95 * t.wait_p50_honest || t.wait_p50_honest - t.wait_p50_gaming <= 60;
    const bool p90 = t.wait_p90_gaming >= 0.95 * t.wait_p90_honest || t.wait_p90_honest - t.wait_p90_gaming <= 60;
    return p50 && p90;
  }
  return true;
}

void print_counterfactual(std::FILE* out, const std::vector<Counterfactual>& runs) {
  for (const auto& c : runs) {
    std::fprintf(out, "\n-- counterfactual under %s: %s gaming vs the same workload with %s honest --\n",
                 c.policy.c_str(), c.gaming_team.c_str(), c.gaming_team.c_str());
    std::fprintf(out, "%-14s %6s %9s %9s %9s %9s %7s %7s %8s %8s\n", "team", "share", "p50 game", "p50 hon",
                 "p90 game", "p90 hon", "ratio50", "ratio90", "got game", "got hon");
    for (const auto& t : c.teams)
      std::fprintf(out, "%-14s %6.3f %9s %9s %9s %9s %7.2f %7.2f %8.3f %8.3f  %s\n", t.name.c_str(), t.share,
                   human_duration(t.wait_p50_gaming).c_str(), human_duration(t.wait_p50_honest).c_str(),
                   human_duration(t.wait_p90_gaming).c_str(), human_duration(t.wait_p90_honest).c_str(),
                   t.ratio_p50, t.ratio_p90, t.share_gaming, t.share_honest, t.gaming ? "gain" : "harm");
    std::fprintf(out, "%s: gain p50 %.2f p90 %.2f (> 1: gaming paid)%s; worst harm to another team p50 %.2f p90 %.2f\n",
                 c.policy.c_str(), c.gain_p50, c.gain_p90, gaming_did_not_pay(c) ? "" : " GAMING PAID",
                 c.worst_harm_p50, c.worst_harm_p90);
    std::fprintf(out, "%s, gaming run: a team above %.2fx its entitlement while a team below had a fitting job waiting "
                      "%.1f %% of the time (%s %.1f GPU-h above)\n",
                 c.policy.c_str(), kOverEntitlement, 100 * c.over_entitlement_time, c.gaming_team.c_str(),
                 c.gamer_over_entitlement_gpu_hours);
  }
}

std::string counterfactual_json(const std::vector<Counterfactual>& runs, const std::string& title) {
  std::string j = "{\n  \"scenario\": " + json_string(title) + ",\n  \"wait_floor_s\": " + num(kWaitFloor, 0) +
                  ",\n  \"runs\": [\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& c = runs[i];
    j += "    {\"policy\": " + json_string(c.policy) + ", \"gaming_team\": " + json_string(c.gaming_team) +
         ", \"gain_p50\": " + num(c.gain_p50, 4) + ", \"gain_p90\": " + num(c.gain_p90, 4) +
         ", \"gaming_paid\": " + (gaming_did_not_pay(c) ? "false" : "true") +
         ", \"worst_harm_p50\": " + num(c.worst_harm_p50, 4) + ", \"worst_harm_p90\": " + num(c.worst_harm_p90, 4) +
         ", \"over_entitlement_time\": " + num(c.over_entitlement_time, 4) +
         ", \"gamer_over_entitlement_gpu_hours\": " + num(c.gamer_over_entitlement_gpu_hours, 2) +
         ", \"teams\": [";
    for (size_t k = 0; k < c.teams.size(); ++k) {
      const auto& t = c.teams[k];
      j += std::string(k ? ", " : "") + "{\"name\": " + json_string(t.name) +
           ", \"gaming\": " + (t.gaming ? "true" : "false") + ", \"share\": " + num(t.share, 4) +
           ", \"wait_p50_gaming_s\": " + num(t.wait_p50_gaming, 0) + ", \"wait_p50_honest_s\": " + num(t.wait_p50_honest, 0) +
           ", \"wait_p90_gaming_s\": " + num(t.wait_p90_gaming, 0) + ", \"wait_p90_honest_s\": " + num(t.wait_p90_honest, 0) +
           ", \"ratio_p50\": " + num(t.ratio_p50, 4) + ", \"ratio_p90\": " + num(t.ratio_p90, 4) +
           ", \"gpu_hour_share_gaming\": " + num(t.share_gaming, 4) +
           ", \"gpu_hour_share_honest\": " + num(t.share_honest, 4) + "}";
    }
    j += std::string("]}") + (i + 1 < runs.size() ? "," : "") + "\n";
  }
  j += "  ]\n}\n";
  return j;
}

}  // namespace gpufair::sim
