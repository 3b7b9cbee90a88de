// Converter from SenseTime's Helios trace (cluster_log.csv, one file per
// cluster: job_id, user, vc, jobname, gpu_num, cpu_num, node_num, state,
// submit_time, start_time, end_time, duration, queue) into the simulator's
// CSV. Mapping: account = vc (the virtual cluster is the team), user = user,
// gpus = gpu_num, runtime = duration (or end_time - start_time), submit =
// seconds since the first job's submit_time, qos = low (Helios has none).
// Jobs with no GPUs (CPU jobs) or that never started are skipped and counted.
// The columns are found by header name, so their order does not matter.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace gpufair::sim {

struct ConvertStats {
  std::uint64_t rows = 0, written = 0, cpu_only = 0, never_started = 0, bad = 0;
  std::vector<std::string> errors;  // "file:line: reason", the first few
};

// Throws SourceError when the file cannot be read or a required column is
// missing; a bad row is an error unless skip_bad_rows (then counted).
ConvertStats convert_helios(const std::string& in_path, std::FILE* out, bool skip_bad_rows);

// "2020-04-01 00:00:39" (UTC) or plain seconds; false on anything else.
bool parse_helios_time(const std::string& text, std::int64_t& seconds);

}  // namespace gpufair::sim
