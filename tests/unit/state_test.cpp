// The state frame: magic, version, length, checksum.
#include "gpufair/state.h"

#include <gtest/gtest.h>

#include <string>

namespace gpufair {
namespace {

std::vector<std::uint8_t> bytes_of(std::string_view s) { return {s.begin(), s.end()}; }

TEST(StateFrame, RoundTrip) {
  const auto payload = bytes_of("hello state");
  const auto framed = frame_state(payload);
  ASSERT_EQ(framed.size(), kStateHeaderSize + payload.size());
  auto back = unframe_state(framed);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->version, kStateFormatVersion);
  EXPECT_EQ(std::vector<std::uint8_t>(back->bytes.begin(), back->bytes.end()), payload);
}

TEST(StateFrame, EmptyInput) {
  auto r = unframe_state({});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("empty"), std::string::npos);
}

TEST(StateFrame, TruncatedAtEveryLength) {
  const auto framed = frame_state(bytes_of("some payload bytes"));
  for (std::size_t n = 1; n < framed.size(); ++n) {
    auto r = unframe_state(std::span(framed).first(n));
    EXPECT_FALSE(r.ok()) << n;
    if (!r.ok()) {
      EXPECT_NE(r.error().message.find("truncated"), std::string::npos) << r.error().message;
    }
  }
}

TEST(StateFrame, EveryFlippedPayloadByteIsAChecksumError) {
  const auto framed = frame_state(bytes_of("0123456789abcdef"));
  for (std::size_t i = kStateHeaderSize; i < framed.size(); ++i) {
    auto bad = framed;
    bad[i] ^= 0x40;
    auto r = unframe_state(bad);
    ASSERT_FALSE(r.ok()) << i;
    EXPECT_NE(r.error().message.find("checksum"), std::string::npos) << r.error().message;
  }
}

TEST(StateFrame, WrongMagic) {
  auto framed = frame_state(bytes_of("x"));
  framed[0] = 'X';
  auto r = unframe_state(framed);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("magic"), std::string::npos);
}

TEST(StateFrame, FutureVersion) {
  auto framed = frame_state(bytes_of("x"));
  framed[8] = static_cast<std::uint8_t>(kStateFormatVersion + 1);
  auto r = unframe_state(framed);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("newer"), std::string::npos) << r.error().message;
}

TEST(StateFrame, TrailingGarbageIsCorrupt) {
  auto framed = frame_state(bytes_of("x"));
  framed.push_back(0);
  auto r = unframe_state(framed);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("corrupt"), std::string::npos) << r.error().message;
}

TEST(ByteReader, FailsInsteadOfOverreading) {
  ByteWriter w;
  w.u32(7);
  w.str("abc");
  w.u64(1'000'000);  // a count far larger than the bytes left
  ByteReader r(w.bytes());
  EXPECT_EQ(r.u32(), 7u);
  EXPECT_EQ(r.str(), "abc");
  EXPECT_EQ(r.count(8), 0u);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.failure().find("cannot fit"), std::string::npos);
  EXPECT_EQ(r.u64(), 0u);  // sticky failure
}

TEST(ByteReader, StringLengthBeyondInput) {
  ByteWriter w;
  w.u32(1000);
  ByteReader r(w.bytes());
  EXPECT_EQ(r.str(), "");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.failure().find("truncated"), std::string::npos);
}

TEST(Fnv1a64, KnownVectors) {
  EXPECT_EQ(fnv1a64({}), 0xcbf29ce484222325ull);
  const auto a = bytes_of("a");
  EXPECT_EQ(fnv1a64(a), 0xaf63dc4c8601ec8cull);
  const auto foobar = bytes_of("foobar");
  EXPECT_EQ(fnv1a64(foobar), 0x85944171f73967e8ull);
}

}  // namespace
}  // namespace gpufair
