#include "gpufair/state.h"

#include <bit>
#include <cstring>

namespace gpufair {

std::uint64_t fnv1a64(std::span<const std::uint8_t> bytes) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::uint8_t b : bytes) {
    h ^= b;
    h *= 0x100000001b3ull;
  }
  return h;
}

void ByteWriter::u32(std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void ByteWriter::u64(std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void ByteWriter::f64(double v) { u64(std::bit_cast<std::uint64_t>(v)); }
void ByteWriter::str(std::string_view s) {
  u32(static_cast<std::uint32_t>(s.size()));
  out_.insert(out_.end(), s.begin(), s.end());
}

void ByteReader::fail(std::string why) {
  if (ok_) failure_ = std::move(why);
  ok_ = false;
}

bool ByteReader::take(std::size_t n) {
  if (!ok_) return false;
  if (n > remaining()) {
    fail("truncated payload: needed " + std::to_string(n) + " more bytes at offset " +
         std::to_string(pos_) + ", " + std::to_string(remaining()) + " left");
    return false;
  }
  return true;
}

std::uint8_t ByteReader::u8() {
  if (!take(1)) return 0;
  return in_[pos_++];
}
std::uint32_t ByteReader::u32() {
  if (!take(4)) return 0;
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(in_[pos_ + i]) << (8 * i);
  pos_ += 4;
  return v;
}
std::uint64_t ByteReader::u64() {
  if (!take(8)) return 0;
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(in_[pos_ + i]) << (8 * i);
  pos_ += 8;
  return v;
}
double ByteReader::f64() { return std::bit_cast<double>(u64()); }
std::string ByteReader::str() {
  const std::uint32_t n = u32();
  if (!take(n)) return {};
  std::string s(reinterpret_cast<const char*>(in_.data() + pos_), n);
  pos_ += n;
  return s;
}
std::uint64_t ByteReader::count(std::size_t min_record_bytes) {
  const std::uint64_t n = u64();
  if (!ok_) return 0;
  if (min_record_bytes > 0 && n > remaining() / min_record_bytes) {
    fail("record count " + std::to_string(n) + " cannot fit in the " +
         std::to_string(remaining()) + " bytes left");
    return 0;
  }
  return n;
}

std::vector<std::uint8_t> frame_state(std::span<const std::uint8_t> payload) {
  ByteWriter w;
  for (char c : kStateMagic) w.u8(static_cast<std::uint8_t>(c));
  w.u32(kStateFormatVersion);
  w.u64(payload.size());
  w.u64(fnv1a64(payload));
  auto& out = w.bytes();
  out.insert(out.end(), payload.begin(), payload.end());
  return std::move(out);
}

Result<StatePayload> unframe_state(std::span<const std::uint8_t> bytes) {
  if (bytes.empty()) return Error{"state is empty (0 bytes)"};
  if (bytes.size() < kStateHeaderSize) {
    return Error{"state is truncated: " + std::to_string(bytes.size()) +
                 " bytes, the header alone needs " + std::to_string(kStateHeaderSize)};
  }
  if (std::memcmp(bytes.data(), kStateMagic, sizeof kStateMagic) != 0) {
    return Error{"not a gpufair state file (wrong magic; expected \"GPUFAIR1\")"};
  }
  ByteReader r(bytes.subspan(sizeof kStateMagic));
  const std::uint32_t version = r.u32();
  const std::uint64_t length = r.u64();
  const std::uint64_t checksum = r.u64();
  if (version > kStateFormatVersion) {
    return Error{"state format version " + std::to_string(version) +
                 " is newer than this gpufair supports (" +
                 std::to_string(kStateFormatVersion) + ")"};
  }
  if (version == 0) return Error{"state format version 0 is invalid"};
  const std::size_t have = bytes.size() - kStateHeaderSize;
  if (length != have) {
    return Error{"state is " + std::string(length > have ? "truncated" : "corrupt") +
                 ": header says " + std::to_string(length) + " payload bytes, file has " +
                 std::to_string(have)};
  }
  auto payload = bytes.subspan(kStateHeaderSize);
  if (fnv1a64(payload) != checksum) {
    return Error{"state is corrupt: checksum mismatch"};
  }
  return StatePayload{version, payload};
}

}  // namespace gpufair
