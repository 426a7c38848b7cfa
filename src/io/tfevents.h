// TensorBoard event files: TFRecord framing (masked CRC-32C) around hand-encoded Event
// protobufs. The writer emits what torch's SummaryWriter does for scalars (file_version
// first, simple_value summaries) plus a SessionLog START on resume, so TensorBoard drops
// points logged after the last checkpoint; the reader decodes scalars back, checking
// CRCs, and can apply TensorBoard's restart semantics.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace oc::io {

uint32_t crc32c(std::span<const uint8_t> bytes);
uint32_t masked_crc32c(std::span<const uint8_t> bytes);  // ((c >> 15) | (c << 17)) + 0xA282EAD8

// Event payloads (serialized protobuf) and their TFRecord framing.
std::vector<uint8_t> event_file_version(double wall_time);
std::vector<uint8_t> event_scalar(double wall_time, int64_t step, std::string_view tag, float value);
std::vector<uint8_t> event_session_start(double wall_time, int64_t step);
std::vector<uint8_t> tfrecord(std::span<const uint8_t> payload);

// One event file in `logdir` (created if missing), named
// events.out.tfevents.<10-digit seconds>.<hostname>.<pid>.<n>. Records are written to the
// file when flush_secs have passed since the last write (0 = every record), at flush() and
// on destruction. Throws oc::Error on I/O failure.
class EventWriter {
 public:
  explicit EventWriter(const std::string& logdir, double flush_secs = 0);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  void add_scalar(std::string_view tag, float value, int64_t step, double wall_time = now());
  // Marks a (re)start at `step`: TensorBoard discards earlier points with step >= `step`.
  void session_start(int64_t step, double wall_time = now());
  void flush();
  const std::string& path() const { return path_; }
  static double now();

 private:
  void append(std::span<const uint8_t> payload);
  std::string path_;
  int fd_ = -1;
  double flush_secs_ = 0, last_flush_ = 0;
  std::vector<uint8_t> buf_;
};

struct ScalarPoint {
  double wall_time = 0;
  int64_t step = 0;
  std::string tag;
  float value = 0;
};

struct EventScan {
  std::vector<ScalarPoint> scalars;
  std::string file_version;  // from the first event that has one
  uint64_t complete_bytes = 0;  // end of the last whole record; a reader tailing a live file resumes here
  bool partial_tail = false;    // bytes after it form an incomplete record (not yet written)
};

// Decodes every record of `bytes` (CRCs checked; a bad CRC or malformed protobuf is an
// error naming the byte offset). Scalars are simple_value and rank-0 DT_FLOAT/DT_DOUBLE
// tensors. With apply_restarts, a SessionLog START at step S drops earlier points with
// step >= S, as TensorBoard does.
Result<EventScan> scan_events(std::span<const uint8_t> bytes, bool apply_restarts, const std::string& where = "events");
Result<EventScan> read_events(const std::string& path, bool apply_restarts);

}  // namespace oc::io
