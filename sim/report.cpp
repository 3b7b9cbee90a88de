#include "report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "text_util.h"

namespace gpufair::sim {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

namespace {

std::string wait_cell(const std::vector<Seconds>& w, double p) {
  return w.empty() ? "-" : human_duration(percentile(w, p));
}


std::string json_num(double v, int decimals = 6) {
  if (!std::isfinite(v)) return "null";
  std::string s = fmt(v, decimals);
  // Trim trailing zeros for readability; deterministic either way.
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

std::string json_wait(const std::vector<Seconds>& w, double p) {
  return w.empty() ? "null" : json_num(percentile(w, p), 0);
}

const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                          "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};

}  // namespace

void print_over_entitlement(std::FILE* out, const RunResult& r) {
  const double span = static_cast<double>(r.end - r.measure_from);
  std::fprintf(out, "held above %.2fx entitlement while a team below its own had a fitting job waiting: %.1f %% of the time",
               kOverEntitlement, span > 0 ? 100.0 * r.over_entitlement_s / span : 0.0);
  for (const auto& t : r.teams)
    if (t.over_entitlement_s > 0)
      std::fprintf(out, "; %s %.1f GPU-h over %s", t.name.c_str(), t.over_entitlement_gpu_s / 3600.0,
                   human_duration(t.over_entitlement_s).c_str());
  std::fprintf(out, "\n");
}

void print_table(std::FILE* out, const RunResult& r, const std::string& title) {
  std::fprintf(out, "\n== %s — policy %s ==\n", title.c_str(), r.policy.c_str());
  std::fprintf(out, "%-14s %7s %9s %6s %6s %8s %8s %8s %8s %8s %6s %6s %6s %5s %7s %7s %5s %5s\n", "team", "jobs",
               "GPU-h", "share", "got", "wait50", "wait90", "wait99", "high50", "high90", "pre+",
               "pre-", "refus", "bait", "penalty", "priceGh", "recl+", "recl-");
  for (const auto& t : r.teams) {
    std::fprintf(out, "%-14s %7llu %9.1f %6.3f %6.3f %8s %8s %8s %8s %8s %6llu %6llu %6llu %5llu %7.3f %7.1f %5llu %5llu\n",
                 t.name.c_str(), static_cast<unsigned long long>(t.jobs), t.gpu_hours, t.share,
                 t.gpu_hour_share, wait_cell(t.waits, 50).c_str(), wait_cell(t.waits, 90).c_str(),
                 wait_cell(t.waits, 99).c_str(), wait_cell(t.high_waits, 50).c_str(),
                 wait_cell(t.high_waits, 90).c_str(), static_cast<unsigned long long>(t.preemptions_caused),
                 static_cast<unsigned long long>(t.preemptions_suffered),
                 static_cast<unsigned long long>(t.preemptions_refused),
                 static_cast<unsigned long long>(t.bait_detections), t.penalty, t.price_gpu_s / 3600.0,
                 static_cast<unsigned long long>(t.reclaims_made),
                 static_cast<unsigned long long>(t.reclaimed_from));
  }
  std::fprintf(out, "GPU utilisation %.3f   Jain index (share-normalised GPU-hours) %.3f   jobs %llu   preemptions %llu\n",
               r.utilization, r.jain_index, static_cast<unsigned long long>(r.jobs),
               static_cast<unsigned long long>(r.preemptions));
  print_over_entitlement(out, r);
  if (r.gaming_advantage)
    std::fprintf(out, "gaming advantage of %s: %.3f  (its high jobs' median wait %s / others' median wait %s)\n",
                 r.gaming_team.c_str(), *r.gaming_advantage, human_duration(r.gaming_high_wait_p50).c_str(),
                 human_duration(r.others_wait_p50).c_str());
  else
    std::fprintf(out, "gaming advantage: n/a (no gaming team with qos=high jobs)\n");
  if (r.detector)
    std::fprintf(out, "bait detector on labelled victims: precision %.3f recall %.3f (tp %llu fp %llu fn %llu tn %llu)\n",
                 r.detector->precision(), r.detector->recall(),
                 static_cast<unsigned long long>(r.detector->true_positive),
                 static_cast<unsigned long long>(r.detector->false_positive),
                 static_cast<unsigned long long>(r.detector->false_negative),
                 static_cast<unsigned long long>(r.detector->true_negative));
  if (r.rejected_jobs || r.skipped_rows)
    std::fprintf(out, "rejected (larger than the cluster) %llu   skipped bad rows %llu\n",
                 static_cast<unsigned long long>(r.rejected_jobs), static_cast<unsigned long long>(r.skipped_rows));
  std::fprintf(out, "simulated %s in %.2f s wall, %.2f s CPU (%.0f jobs/s of CPU)\n", human_duration(r.sim_seconds).c_str(),
               r.wall_seconds, r.cpu_seconds, r.cpu_seconds > 0 ? static_cast<double>(r.jobs) / r.cpu_seconds : 0.0);
  std::fprintf(out, "columns: share = configured, got = share of GPU-hours%s; wait = submit to first start;\n"
                    "  high = qos=high jobs; pre+/pre- = in-team preemptions caused/suffered; refus = refused as bait\n",
               r.measure_from > 0 ? (" from t=" + human_duration(static_cast<double>(r.measure_from))).c_str() : "");
  std::fprintf(out, "gaming advantage = %s\n", kGamingAdvantageDefinition);
}

void print_comparison(std::FILE* out, const std::vector<RunResult>& runs) {
  if (runs.empty()) return;
  std::fprintf(out, "\n== side by side ==\n%-34s", "");
  for (const auto& r : runs) std::fprintf(out, " %14s", r.policy.c_str());
  std::fprintf(out, "\n");
  auto row = [&](const char* label, auto cell) {
    std::fprintf(out, "%-34s", label);
    for (const auto& r : runs) std::fprintf(out, " %14s", cell(r).c_str());
    std::fprintf(out, "\n");
  };
  row("gaming advantage", [](const RunResult& r) { return r.gaming_advantage ? fmt(*r.gaming_advantage, 3) : std::string("n/a"); });
  row("Jain index", [](const RunResult& r) { return fmt(r.jain_index, 3); });
  row("utilisation", [](const RunResult& r) { return fmt(r.utilization, 3); });
  row("preemptions", [](const RunResult& r) { return std::to_string(r.preemptions); });
  for (size_t i = 0; i < runs[0].teams.size(); ++i) {
    const auto& name = runs[0].teams[i].name;
    auto team_cell = [&](auto f) {
      return [&, f](const RunResult& r) {
        for (const auto& t : r.teams)
          if (t.name == name) return f(t);
        return std::string("-");
      };
    };
    row((name + " GPU-h share/configured").c_str(),
        team_cell([](const TeamResult& t) { return fmt(t.gpu_hour_share, 3) + "/" + fmt(t.share, 3); }));
    row((name + " wait p50 (high p50)").c_str(), team_cell([](const TeamResult& t) {
          return wait_cell(t.waits, 50) + (t.high_waits.empty() ? "" : " (" + wait_cell(t.high_waits, 50) + ")");
        }));
    row((name + " penalty").c_str(), team_cell([](const TeamResult& t) { return fmt(t.penalty, 3); }));
  }
}

std::string to_json(const RunResult& r, const std::string& scenario) {
  std::string j = "{\n";
  auto field = [&](const std::string& k, const std::string& v) { j += "  " + json_string(k) + ": " + v + ",\n"; };
  field("policy", json_string(r.policy));
  field("scenario", json_string(scenario));
  j += "  \"teams\": [\n";
  for (size_t i = 0; i < r.teams.size(); ++i) {
    const auto& t = r.teams[i];
    j += "    {\"name\": " + json_string(t.name) + ", \"jobs\": " + std::to_string(t.jobs) +
         ", \"started\": " + std::to_string(t.started) + ", \"never_started\": " + std::to_string(t.never_started) +
         ", \"high_jobs\": " + std::to_string(t.high_waits.size()) + ", \"gpu_hours\": " + json_num(t.gpu_hours, 4) +
         ", \"shares\": " + json_num(t.shares) + ", \"share\": " + json_num(t.share) +
         ", \"gpu_hour_share\": " + json_num(t.gpu_hour_share) + ", \"wait_p50_s\": " + json_wait(t.waits, 50) +
         ", \"wait_p90_s\": " + json_wait(t.waits, 90) + ", \"wait_p99_s\": " + json_wait(t.waits, 99) +
         ", \"high_wait_p50_s\": " + json_wait(t.high_waits, 50) + ", \"high_wait_p90_s\": " + json_wait(t.high_waits, 90) +
         ", \"preemptions_caused\": " + std::to_string(t.preemptions_caused) +
         ", \"preemptions_suffered\": " + std::to_string(t.preemptions_suffered) +
         ", \"preemptions_refused\": " + std::to_string(t.preemptions_refused) +
         ", \"bait_detections\": " + std::to_string(t.bait_detections) + ", \"penalty\": " + json_num(t.penalty) +
         ", \"priced_jumps\": " + std::to_string(t.priced_jumps) + ", \"price_gpu_hours\": " + json_num(t.price_gpu_s / 3600.0, 4) +
         ", \"reclaims_made\": " + std::to_string(t.reclaims_made) +
         ", \"reclaimed_from\": " + std::to_string(t.reclaimed_from) +
         ", \"lost_gpu_hours\": " + json_num(t.lost_gpu_hours, 4) +
         ", \"reclaim_lost_gpu_hours\": " + json_num(t.reclaim_lost_gpu_hours, 4) +
         ", \"over_entitlement_gpu_hours\": " + json_num(t.over_entitlement_gpu_s / 3600.0, 4) +
         ", \"over_entitlement_hours\": " + json_num(t.over_entitlement_s / 3600.0, 4) +
         ", \"fairshare\": " + json_num(t.fairshare) + "}" + (i + 1 < r.teams.size() ? "," : "") + "\n";
  }
  j += "  ],\n";
  field("jain_index", json_num(r.jain_index));
  field("utilization", json_num(r.utilization));
  field("over_entitlement_hours", json_num(r.over_entitlement_s / 3600.0, 4));
  field("gaming_team", r.gaming_team.empty() ? "null" : json_string(r.gaming_team));
  field("gaming_advantage", r.gaming_advantage ? json_num(*r.gaming_advantage) : "null");
  field("gaming_high_wait_p50_s", r.gaming_advantage ? json_num(r.gaming_high_wait_p50, 0) : "null");
  field("others_wait_p50_s", r.gaming_advantage ? json_num(r.others_wait_p50, 0) : "null");
  field("gaming_advantage_definition", json_string(kGamingAdvantageDefinition));
  if (r.detector)
    field("detector", "{\"precision\": " + json_num(r.detector->precision()) + ", \"recall\": " +
                          json_num(r.detector->recall()) + ", \"true_positive\": " +
                          std::to_string(r.detector->true_positive) + ", \"false_positive\": " +
                          std::to_string(r.detector->false_positive) + ", \"false_negative\": " +
                          std::to_string(r.detector->false_negative) + ", \"true_negative\": " +
                          std::to_string(r.detector->true_negative) + "}");
  else
    field("detector", "null");
  field("cluster_gpus", std::to_string(r.cluster_gpus));
  field("jobs", std::to_string(r.jobs));
  field("preemptions", std::to_string(r.preemptions));
  field("preemptors_left_pending", std::to_string(r.preemptors_left_pending));
  field("rejected_jobs", std::to_string(r.rejected_jobs));
  field("skipped_rows", std::to_string(r.skipped_rows));
  field("events", std::to_string(r.events));
  field("measure_from_s", std::to_string(r.measure_from));
  field("sim_seconds", json_num(r.sim_seconds, 0));
  // The two host-dependent figures share the last line, so a diff of two
  // runs can drop exactly that line.
  j += "  \"wall_seconds\": " + json_num(r.wall_seconds, 3) + ", \"cpu_seconds\": " + json_num(r.cpu_seconds, 3) + "\n}\n";
  return j;
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(path + ": cannot write: " + std::strerror(errno));
  out << text;
  if (!out.flush()) throw std::runtime_error(path + ": write failed: " + std::strerror(errno));
}

void write_svg(const std::string& dir, const RunResult& r, const std::string& title) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create directory: " + ec.message());
  // Two panels: usage share over time (left), wait CDF (right).
  const double W = 1100, H = 460, pw = 470, ph = 330, top = 70, left1 = 70, left2 = 600;
  std::string s;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                W, H, W, H);
  s += buf;
  std::string head = title + " — policy " + r.policy;
  if (r.gaming_advantage) head += " — gaming advantage " + fmt(*r.gaming_advantage, 2);
  head += " — Jain " + fmt(r.jain_index, 3);
  std::string esc;
  for (char c : head) esc += c == '<' ? std::string("&lt;") : c == '&' ? std::string("&amp;") : std::string(1, c);
  s += "<text x=\"20\" y=\"28\" font-size=\"16\" font-weight=\"bold\">" + esc + "</text>\n";
  auto axes = [&](double x0, const char* t, const char* xl, const char* yl) {
    std::snprintf(buf, sizeof buf,
                  "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#444\"/>\n"
                  "<text x=\"%.0f\" y=\"%.0f\" font-weight=\"bold\">%s</text>\n"
                  "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n"
                  "<text x=\"%.0f\" y=\"%.0f\" transform=\"rotate(-90 %.0f %.0f)\" text-anchor=\"middle\">%s</text>\n",
                  x0, top, pw, ph, x0, top - 8, t, x0 + pw / 2, top + ph + 34, xl, x0 - 45, top + ph / 2,
                  x0 - 45, top + ph / 2, yl);
    s += buf;
    for (int i = 0; i <= 4; ++i) {
      const double y = top + ph - ph * i / 4.0;
      std::snprintf(buf, sizeof buf,
                    "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%.0f\" y=\"%.1f\" "
                    "text-anchor=\"end\">%.2f</text>\n",
                    x0, y, x0 + pw, y, x0 - 4, y + 4, i / 4.0);
      s += buf;
    }
  };
  axes(left1, "share of GPU-hours per team over time", "simulated time", "share");
  axes(left2, "queue wait CDF per team (all jobs)", "wait (log scale)", "fraction of jobs");

  // Panel 1: usage share per bucket.
  size_t buckets = 0;
  for (const auto& t : r.teams) buckets = std::max(buckets, t.usage_series.size());
  const double span = static_cast<double>(buckets) * static_cast<double>(r.series_bucket);
  for (size_t ti = 0; ti < r.teams.size() && ti < 10; ++ti) {
    const auto& t = r.teams[ti];
    std::string pts;
    for (size_t b = 0; b < buckets; ++b) {
      double total = 0;
      for (const auto& o : r.teams) total += b < o.usage_series.size() ? o.usage_series[b] : 0;
      const double v = total > 0 && b < t.usage_series.size() ? t.usage_series[b] / total : 0;
      const double x = left1 + pw * (static_cast<double>(b) + 0.5) / static_cast<double>(std::max<size_t>(1, buckets));
      std::snprintf(buf, sizeof buf, "%.1f,%.1f ", x, top + ph - ph * v);
      pts += buf;
    }
    // Points can be long: append directly, never through the fixed buffer.
    s += std::string("<polyline fill=\"none\" stroke=\"") + kPalette[ti % 10] +
         "\" stroke-width=\"2\" points=\"" + pts + "\"/>\n";
    // Configured share as a dashed line.
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"4 4\"/>\n",
                  left1, top + ph - ph * t.share, left1 + pw, top + ph - ph * t.share, kPalette[ti % 10]);
    s += buf;
  }
  std::snprintf(buf, sizeof buf, "<text x=\"%.0f\" y=\"%.0f\">0</text><text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%s</text>\n",
                left1, top + ph + 16, left1 + pw, top + ph + 16, human_duration(span).c_str());
  s += buf;

  // Panel 2: wait CDF on log10(1 + wait/60 s).
  Seconds max_wait = 60;
  for (const auto& t : r.teams)
    if (!t.waits.empty()) max_wait = std::max(max_wait, t.waits.back());
  const double xmax = std::log10(1.0 + static_cast<double>(max_wait) / 60.0);
  auto xpos = [&](double w) { return left2 + pw * std::log10(1.0 + w / 60.0) / xmax; };
  for (size_t ti = 0; ti < r.teams.size() && ti < 10; ++ti) {
    const auto& w = r.teams[ti].waits;
    if (w.empty()) continue;
    std::string pts;
    const size_t n = w.size(), step = std::max<size_t>(1, n / 300);
    std::snprintf(buf, sizeof buf, "%.1f,%.1f ", xpos(0), top + ph);
    pts += buf;
    for (size_t i = 0; i < n; i += step) {
      const double y = top + ph - ph * static_cast<double>(i + 1) / static_cast<double>(n);
      std::snprintf(buf, sizeof buf, "%.1f,%.1f ", xpos(static_cast<double>(w[i])), y);
      pts += buf;
    }
    std::snprintf(buf, sizeof buf, "%.1f,%.1f ", xpos(static_cast<double>(w.back())), top);
    pts += buf;
    // Points can be long: append directly, never through the fixed buffer.
    s += std::string("<polyline fill=\"none\" stroke=\"") + kPalette[ti % 10] +
         "\" stroke-width=\"2\" points=\"" + pts + "\"/>\n";
  }
  for (double w : {0.0, 60.0, 600.0, 3600.0, 6 * 3600.0, 86400.0, 7 * 86400.0}) {
    if (w > static_cast<double>(max_wait)) break;
    std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n", xpos(w),
                  top + ph + 16, w == 0 ? "0" : human_duration(w).c_str());
    s += buf;
  }
  // Legend.
  for (size_t ti = 0; ti < r.teams.size() && ti < 10; ++ti) {
    const double x = 70 + static_cast<double>(ti) * 100;
    std::snprintf(buf, sizeof buf,
                  "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
                  x, H - 24, kPalette[ti % 10], x + 16, H - 14, r.teams[ti].name.c_str());
    s += buf;
  }
  s += "<text x=\"20\" y=\"50\" fill=\"#555\">dashed: configured share</text>\n</svg>\n";
  write_text_file(dir + "/" + r.policy + ".svg", s);
}

}  // namespace gpufair::sim
