#include "trace_csv.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <charconv>
#include <cmath>
#include <fstream>
#include <optional>
#include <vector>

#include "text_util.h"

namespace gpufair::sim {
namespace {

constexpr const char* kRequired[] = {"submit", "account", "user", "gpus", "runtime"};

bool has_control_char(std::string_view name) {
  for (const unsigned char c : name)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

class CsvTraceSource final : public JobSource {
 public:
  CsvTraceSource(std::string path, Workload& workload, TraceOptions options)
      : path_(std::move(path)), workload_(workload), options_(options) {
    open_and_read_header();
  }

  bool next(JobSpec& job) override {
    std::string line;
    while (std::getline(in_, line)) {
      ++line_no_;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (trim(line).empty()) continue;
      std::string reason;
      if (parse_row(line, job, reason)) {
        if (job.submit < last_submit_) {
          reason = "submit " + std::to_string(job.submit) + " is earlier than the previous row's " +
                   std::to_string(last_submit_) + " (sort the trace by submit)";
        } else {
          last_submit_ = job.submit;
          return true;
        }
      }
      if (!options_.skip_bad_rows)
        throw SourceError{path_ + ":" + std::to_string(line_no_) + ": " + reason +
                          " (use --skip-bad-rows to skip such rows)"};
      ++skipped_;
    }
    if (in_.bad()) throw SourceError{path_ + ": read error"};
    return false;
  }

  void rewind() override {
    in_.close();
    in_.clear();
    line_no_ = 0;
    last_submit_ = 0;
    skipped_ = 0;
    open_and_read_header();
  }

  std::uint64_t skipped_rows() const override { return skipped_; }

 private:
  void open_and_read_header() {
    in_.open(path_);
    if (!in_) throw SourceError{path_ + ": cannot open: " + std::strerror(errno)};
    std::string header;
    if (!std::getline(in_, header)) throw SourceError{path_ + ":1: empty file, expected a header row"};
    line_no_ = 1;
    if (!header.empty() && header.back() == '\r') header.pop_back();
    const auto names = split_csv(header);
    col_ = {};
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string n = lower(std::string(trim(names[i])));
      if (n == "submit") col_.submit = i;
      else if (n == "account") col_.account = i;
      else if (n == "user") col_.user = i;
      else if (n == "gpus") col_.gpus = i;
      else if (n == "runtime") col_.runtime = i;
      else if (n == "qos") col_.qos = i;
      else if (n == "label") col_.label = i;
    }
    const std::optional<size_t>* req[] = {&col_.submit, &col_.account, &col_.user, &col_.gpus,
                                          &col_.runtime};
    for (size_t i = 0; i < 5; ++i)
      if (!req[i]->has_value())
        throw SourceError{path_ + ":1: header has no '" + kRequired[i] +
                          "' column (required: submit, account, user, gpus, runtime; optional: qos, label)"};
  }

  bool parse_row(const std::string& line, JobSpec& job, std::string& reason) {
    fields_ = split_csv(line);
    auto field = [&](const std::optional<size_t>& c) -> std::string_view {
      if (!c || *c >= fields_.size()) return {};
      return trim(fields_[*c]);
    };
    const size_t needed = std::max({*col_.submit, *col_.account, *col_.user, *col_.gpus, *col_.runtime});
    if (fields_.size() <= needed) {
      reason = "has " + std::to_string(fields_.size()) + " fields, the header needs at least " +
               std::to_string(needed + 1);
      return false;
    }
    double submit = 0, runtime = 0;
    if (!parse_number(field(col_.submit), submit) || submit < 0 || submit > 1e15) {
      reason = "submit '" + std::string(field(col_.submit)) + "' is not a number of seconds >= 0";
      return false;
    }
    if (!parse_number(field(col_.runtime), runtime) || runtime < 0 || runtime > 1e12) {
      reason = "runtime '" + std::string(field(col_.runtime)) + "' is not a number of seconds >= 0";
      return false;
    }
    long long gpus = 0;
    const auto g = field(col_.gpus);
    const auto [p, ec] = std::from_chars(g.data(), g.data() + g.size(), gpus);
    if (ec != std::errc() || p != g.data() + g.size() || gpus < 1 || gpus > 1000000) {
      reason = "gpus '" + std::string(g) + "' is not a whole number of GPUs in [1, 1000000]";
      return false;
    }
    const auto account = lower(std::string(field(col_.account)));
    if (account.empty() || account.front() == '/' || account.back() == '/') {
      reason = "account '" + account + "' is empty or starts/ends with '/'";
      return false;
    }
    // Slurm account and user names cannot hold control characters; a NUL
    // inside a name would also be cut when the trace is written back.
    if (has_control_char(account)) {
      reason = "account contains a control character (byte < 0x20 or 0x7f)";
      return false;
    }
    const auto user = std::string(field(col_.user));
    if (user.empty()) {
      reason = "user is empty";
      return false;
    }
    if (has_control_char(user)) {
      reason = "user contains a control character (byte < 0x20 or 0x7f)";
      return false;
    }
    const auto qos = lower(std::string(field(col_.qos)));
    int rank = kRankLow;
    if (!qos.empty()) {
      const auto qos_rank = rank_of_qos(qos);
      if (!qos_rank) {
        reason = "qos '" + qos + "' is not low, mid or high";
        return false;
      }
      rank = *qos_rank;
    }
    const auto label = lower(std::string(field(col_.label)));
    Label lab = Label::kNone;
    if (label == "bait") lab = Label::kBait;
    else if (label == "honest") lab = Label::kHonest;
    else if (!label.empty()) {
      reason = "label '" + label + "' is not bait, honest or empty";
      return false;
    }
    job.submit = static_cast<TimePoint>(std::llround(submit));
    job.runtime = static_cast<Seconds>(std::llround(runtime));
    job.gpus = static_cast<std::int32_t>(gpus);
    job.account = workload_.accounts.intern(account);
    job.user = workload_.users.intern(user);
    job.rank = rank;
    job.label = lab;
    return true;
  }

  struct Columns {
    std::optional<size_t> submit, account, user, gpus, runtime, qos, label;
  };

  std::string path_;
  Workload& workload_;
  TraceOptions options_;
  std::ifstream in_;
  Columns col_;
  std::vector<std::string> fields_;
  std::uint64_t line_no_ = 0, skipped_ = 0;
  TimePoint last_submit_ = 0;
};

}  // namespace

std::unique_ptr<JobSource> open_trace(const std::string& path, Workload& workload,
                                      TraceOptions options) {
  return std::make_unique<CsvTraceSource>(path, workload, options);
}

TraceWriter::TraceWriter(std::FILE* out, bool with_label) : out_(out), with_label_(with_label) {
  std::fputs(with_label_ ? "submit,account,user,gpus,runtime,qos,label\n"
                         : "submit,account,user,gpus,runtime,qos\n",
             out_);
}

void TraceWriter::write(TimePoint submit, const std::string& account, const std::string& user,
                        int gpus, Seconds runtime, int rank, Label label) {
  std::fprintf(out_, "%lld,%s,%s,%d,%lld,%s", static_cast<long long>(submit),
               csv_escape(account).c_str(), csv_escape(user).c_str(), gpus,
               static_cast<long long>(runtime), qos_name(rank));
  if (with_label_)
    std::fprintf(out_, ",%s", label == Label::kBait ? "bait" : label == Label::kHonest ? "honest" : "");
  std::fputc('\n', out_);
}

}  // namespace gpufair::sim
