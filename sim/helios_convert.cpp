#include "helios_convert.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>

#include "job_spec.h"
#include "text_util.h"
#include "trace_csv.h"

namespace gpufair::sim {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
// well-known civil-calendar arithmetic, written out here).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

struct Row {
  std::int64_t submit;
  std::string account, user;
  int gpus;
  std::int64_t runtime;
  std::uint64_t line;
};

}  // namespace

bool parse_helios_time(const std::string& text, std::int64_t& seconds) {
  const auto t = std::string(trim(text));
  double plain = 0;
  if (parse_number(t, plain)) {
    seconds = static_cast<std::int64_t>(plain);
    return plain >= 0;
  }
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, used = 0;
  if (std::sscanf(t.c_str(), "%4d-%2d-%2d %2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &used) != 6 ||
      used != static_cast<int>(t.size()))
    return false;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60 || y < 1970) return false;
  seconds = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + h * 3600 + mi * 60 + s;
  return true;
}

ConvertStats convert_helios(const std::string& in_path, std::FILE* out, bool skip_bad_rows) {
  std::ifstream in(in_path);
  if (!in) throw SourceError{in_path + ": cannot open: " + std::strerror(errno)};
  std::string line;
  if (!std::getline(in, line)) throw SourceError{in_path + ":1: empty file, expected the Helios header"};
  if (!line.empty() && line.back() == '\r') line.pop_back();
  std::map<std::string, size_t> col;
  const auto header = split_csv(line);
  for (size_t i = 0; i < header.size(); ++i) col[lower(std::string(trim(header[i])))] = i;
  for (const char* need : {"user", "vc", "gpu_num", "submit_time"})
    if (!col.count(need))
      throw SourceError{in_path + ":1: Helios header has no '" + need +
                        "' column (expected job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue)"};
  if (!col.count("duration") && !(col.count("start_time") && col.count("end_time")))
    throw SourceError{in_path + ":1: Helios header needs 'duration' or both 'start_time' and 'end_time'"};

  ConvertStats st;
  std::vector<Row> rows;
  std::uint64_t line_no = 1;
  auto bad = [&](const std::string& why) {
    const auto msg = in_path + ":" + std::to_string(line_no) + ": " + why;
    if (!skip_bad_rows) throw SourceError{msg + " (use --skip-bad-rows to skip such rows)"};
    ++st.bad;
    if (st.errors.size() < 10) st.errors.push_back(msg);
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trim(line).empty()) continue;
    ++st.rows;
    const auto f = split_csv(line);
    auto get = [&](const char* name) -> std::string {
      const auto it = col.find(name);
      return it != col.end() && it->second < f.size() ? std::string(trim(f[it->second])) : std::string();
    };
    double gpus = 0;
    if (!parse_number(get("gpu_num"), gpus) || gpus < 0 || gpus != static_cast<int>(gpus)) {
      bad("gpu_num '" + get("gpu_num") + "' is not a whole number >= 0");
      continue;
    }
    if (gpus == 0) {
      ++st.cpu_only;
      continue;
    }
    std::int64_t submit = 0;
    if (!parse_helios_time(get("submit_time"), submit)) {
      bad("submit_time '" + get("submit_time") + "' is not 'YYYY-MM-DD hh:mm:ss' or seconds");
      continue;
    }
    std::int64_t runtime = -1;
    if (col.count("start_time") && get("start_time").empty()) {
      ++st.never_started;
      continue;
    }
    if (col.count("duration") && !get("duration").empty()) {
      double d = 0;
      if (!parse_number(get("duration"), d) || d < 0) {
        bad("duration '" + get("duration") + "' is not a number of seconds >= 0");
        continue;
      }
      runtime = static_cast<std::int64_t>(d);
    } else {
      std::int64_t a = 0, b = 0;
      if (!parse_helios_time(get("start_time"), a) || !parse_helios_time(get("end_time"), b) || b < a) {
        bad("no duration and start_time/end_time do not give one");
        continue;
      }
      runtime = b - a;
    }
    const auto account = lower(get("vc"));
    const auto user = get("user");
    if (account.empty() || user.empty()) {
      bad("vc or user is empty");
      continue;
    }
    rows.push_back({submit, account, user, static_cast<int>(gpus), runtime, line_no});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.submit < b.submit; });
  TraceWriter w(out, false);
  const std::int64_t t0 = rows.empty() ? 0 : rows.front().submit;
  for (const auto& r : rows) {
    w.write(r.submit - t0, r.account, r.user, r.gpus, r.runtime, kRankLow, Label::kNone);
    ++st.written;
  }
  return st;
}

}  // namespace gpufair::sim
