// Small text helpers shared by the simulator's readers and writers.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace gpufair::sim {

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

inline std::string lower(std::string s) {
  for (auto& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

// Splits one CSV line; double-quoted fields may contain commas and "" quotes.
inline std::vector<std::string> split_csv(std::string_view line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(std::move(cur));
  return out;
}

inline std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// A whole-field decimal number ("12", "12.5", "1e3"); false on anything else.
inline bool parse_number(std::string_view s, double& out) {
  if (s.empty()) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out == out;  // rejects NaN
}

// Deterministic number formatting for reports: no locale, fixed precision.
inline std::string fmt(double v, int decimals = 3) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// "3h12m", "45s", "2d4h": waits a person can read in a table.
inline std::string human_duration(double seconds) {
  if (seconds < 0) return "-";
  const auto s = static_cast<std::int64_t>(seconds + 0.5);
  char buf[64];
  if (s < 60) std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  else if (s < 86400) std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600), static_cast<long long>(s % 3600 / 60));
  else std::snprintf(buf, sizeof buf, "%lldd%02lldh", static_cast<long long>(s / 86400), static_cast<long long>(s % 86400 / 3600));
  return buf;
}

}  // namespace gpufair::sim
