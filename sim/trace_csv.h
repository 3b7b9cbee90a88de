// The simulator's trace format: CSV with a header naming the columns, in any
// order (unknown columns are ignored):
//   submit   seconds from trace start (integer or decimal, non-decreasing)
//   account  Slurm account path below root, '/'-separated ("teama/nlp")
//   user     user name
//   gpus     GPUs requested (integer >= 1)
//   runtime  seconds the job runs if never preempted (>= 0)
//   qos      low | high (optional; missing or empty = low)
//   label    bait | honest (optional ground truth for the detector)
// A malformed row is an error naming file:line and the reason; with
// skip_bad_rows it is counted and skipped instead.
#pragma once

#include <cstdio>
#include <string>

#include "job_spec.h"

namespace gpufair::sim {

struct TraceOptions {
  bool skip_bad_rows = false;
};

// Opens `path` (throws SourceError if it cannot be read or the header lacks a
// required column) and streams its rows into jobs, interning names in `workload`.
std::unique_ptr<JobSource> open_trace(const std::string& path, Workload& workload,
                                      TraceOptions options);

// Writes rows in the same format (used by the converter and the generator).
class TraceWriter {
 public:
  explicit TraceWriter(std::FILE* out, bool with_label);
  void write(TimePoint submit, const std::string& account, const std::string& user,
             int gpus, Seconds runtime, int rank, Label label);

 private:
  std::FILE* out_;
  bool with_label_;
};

}  // namespace gpufair::sim
