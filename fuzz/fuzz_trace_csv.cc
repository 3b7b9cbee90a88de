// libFuzzer target: the simulator's trace CSV reader (sim/trace_csv.h).
//
// The input is the whole CSV file (header row first). Checked on every input:
//   - strict mode: reading either succeeds to the end or throws SourceError
//     with a non-empty message; every job it yields is well-formed (gpus >= 1,
//     runtime >= 0, submit non-decreasing, account and user interned);
//   - skip_bad_rows mode: only a bad header may throw; the rows it accepts
//     are exactly the rows strict mode accepted before its first error;
//   - rewind() replays the same jobs;
//   - the accepted jobs written back with TraceWriter read back identical.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "job_spec.h"
#include "trace_csv.h"

using gpufair::sim::JobSpec;
using gpufair::sim::SourceError;
using gpufair::sim::TraceOptions;
using gpufair::sim::Workload;

namespace {

using fuzz_util::fail;
using fuzz_util::MemFile;



struct Row {
  gpufair::TimePoint submit;
  std::string account, user;
  std::int32_t gpus;
  gpufair::Seconds runtime;
  std::int32_t rank;
  gpufair::sim::Label label;
  bool operator==(const Row&) const = default;
};

// Reads all jobs; returns false (with the message) on a SourceError.
bool read_all(const std::string& path, bool skip_bad, std::vector<Row>& rows, std::string& error,
              std::uint64_t* skipped = nullptr) {
  Workload w;
  try {
    TraceOptions opt;
    opt.skip_bad_rows = skip_bad;
    auto src = gpufair::sim::open_trace(path, w, opt);
    for (int pass = 0; pass < 2; ++pass) {
      std::vector<Row> got;
      JobSpec j;
      gpufair::TimePoint last = 0;
      while (src->next(j)) {
        if (j.gpus < 1) fail("a job with gpus < 1");
        if (j.runtime < 0) fail("a job with a negative runtime");
        if (j.submit < last) fail("jobs out of submit order");
        last = j.submit;
        if (j.account < 0 || static_cast<std::size_t>(j.account) >= w.accounts.size()) fail("bad account index");
        if (j.user < 0 || static_cast<std::size_t>(j.user) >= w.users.size()) fail("bad user index");
        got.push_back(Row{j.submit, w.accounts.name(j.account), w.users.name(j.user), j.gpus,
                          j.runtime, j.rank, j.label});
        if (got.size() > 1'000'000) fail("more jobs than the input can hold");
      }
      if (pass == 0) {
        rows = std::move(got);
        if (skipped) *skipped = src->skipped_rows();
        src->rewind();
      } else if (got != rows) {
        fail("rewind() does not replay the same jobs");
      }
    }
    return true;
  } catch (const SourceError& e) {
    if (e.message.empty()) fail("SourceError with an empty message");
    error = e.message;
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz_util::target_name = "fuzz_trace_csv";
  static MemFile file{"fuzz_trace_csv"};
  file.set(data, size);

  std::vector<Row> strict, lenient;
  std::string err_strict, err_lenient;
  bool ok_strict = read_all(file.path, false, strict, err_strict);
  // rewind() inside read_all re-reads the file: a strict failure on the
  // second pass would be a bug too (it throws the same error).
  std::uint64_t skipped = 0;
  bool ok_lenient = read_all(file.path, true, lenient, err_lenient, &skipped);
  if (ok_strict && !ok_lenient) fail("skip_bad_rows fails where strict mode succeeds");
  if (ok_strict && (lenient != strict || skipped != 0))
    fail("skip_bad_rows and strict mode disagree on a clean trace");

  // Write the accepted rows back and read them again.
  if (ok_lenient && !lenient.empty()) {
    static MemFile out{"fuzz_trace_csv_out"};
    std::FILE* f = std::tmpfile();
    if (!f) fail("tmpfile failed");
    {
      gpufair::sim::TraceWriter w(f, true);
      for (const auto& r : lenient) w.write(r.submit, r.account, r.user, r.gpus, r.runtime, r.rank, r.label);
    }
    std::fflush(f);
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(std::ftell(f)));
    std::rewind(f);
    if (!bytes.empty() && std::fread(bytes.data(), 1, bytes.size(), f) != bytes.size()) fail("fread failed");
    std::fclose(f);
    out.set(bytes.data(), bytes.size());
    std::vector<Row> again;
    std::string err;
    if (!read_all(out.path, false, again, err)) {
      std::fprintf(stderr, "fuzz_trace_csv: re-reading written rows: %s\n", err.c_str());
      fail("TraceWriter output does not read back");
    }
    if (again != lenient) {
      for (std::size_t i = 0; i < std::min(again.size(), lenient.size()); ++i) {
        if (again[i] == lenient[i]) continue;
        const Row &x = lenient[i], &y = again[i];
        std::fprintf(stderr,
                     "fuzz_trace_csv: row %zu read:    submit=%lld account=\"%s\" (%zu bytes) user=\"%s\" (%zu bytes) gpus=%d runtime=%lld rank=%d\n"
                     "fuzz_trace_csv: row %zu re-read: submit=%lld account=\"%s\" (%zu bytes) user=\"%s\" (%zu bytes) gpus=%d runtime=%lld rank=%d\n",
                     i, static_cast<long long>(x.submit), x.account.c_str(), x.account.size(), x.user.c_str(),
                     x.user.size(), x.gpus, static_cast<long long>(x.runtime), x.rank, i,
                     static_cast<long long>(y.submit), y.account.c_str(), y.account.size(), y.user.c_str(),
                     y.user.size(), y.gpus, static_cast<long long>(y.runtime), y.rank);
        break;
      }
      if (again.size() != lenient.size())
        std::fprintf(stderr, "fuzz_trace_csv: %zu rows read, %zu re-read\n", lenient.size(), again.size());
      fail("TraceWriter output reads back different jobs");
    }
  }
  return 0;
}
