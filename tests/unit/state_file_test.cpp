// Crash-safe state files: the previous good file survives every fault.
#include "gpufair/state_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace gpufair {
namespace {

namespace fs = std::filesystem;

class StateFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpufair-state-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/gpufair.state";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string read(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  static std::vector<std::uint8_t> bytes(std::string_view s) { return {s.begin(), s.end()}; }

  std::string dir_, path_;
};

TEST_F(StateFileTest, WriteThenReadBack) {
  ASSERT_TRUE(write_file_atomically(path_, bytes("first")).ok());
  EXPECT_EQ(read(path_), "first");
  ASSERT_TRUE(write_file_atomically(path_, bytes("second, longer")).ok());
  auto back = read_whole_file(path_);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(std::string(back->begin(), back->end()), "second, longer");
  EXPECT_FALSE(fs::exists(temp_path_for(path_)));
  EXPECT_EQ(fs::status(path_).permissions() & fs::perms::others_read, fs::perms::none);
}

TEST_F(StateFileTest, MissingFileIsAClearError) {
  auto r = read_whole_file(dir_ + "/nope");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("No such file"), std::string::npos) << r.error().message;
}

TEST_F(StateFileTest, OversizedFileIsRefused) {
  ASSERT_TRUE(write_file_atomically(path_, bytes("0123456789")).ok());
  auto r = read_whole_file(path_, posix_file_ops(), 5);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("larger than"), std::string::npos);
}

// Injects one fault into the otherwise real system calls.
class FaultyOps : public FileOps {
 public:
  enum class Fault { kNone, kOpenFails, kEnospcMidway, kEio, kShortWrites, kFsyncFails, kCrashBeforeRename };
  explicit FaultyOps(Fault f) : fault_(f) {}
  int open(const char* p, int flags, mode_t mode) override {
    if (fault_ == Fault::kOpenFails && (flags & O_CREAT)) {
      errno = EACCES;
      return -1;
    }
    return FileOps::open(p, flags, mode);
  }
  ssize_t write(int fd, const void* buf, std::size_t n) override {
    ++writes_;
    switch (fault_) {
      case Fault::kEnospcMidway:
        if (writes_ > 1) {
          errno = ENOSPC;
          return -1;
        }
        return FileOps::write(fd, buf, n / 2);  // half gets out, then the disk is full
      case Fault::kEio:
        errno = EIO;
        return -1;
      case Fault::kShortWrites:
        return FileOps::write(fd, buf, n < 3 ? n : 3);  // legal: the writer must loop
      default:
        return FileOps::write(fd, buf, n);
    }
  }
  int fsync(int fd) override {
    if (fault_ == Fault::kFsyncFails) {
      errno = EIO;
      return -1;
    }
    return FileOps::fsync(fd);
  }
  int rename(const char* from, const char* to) override {
    if (fault_ == Fault::kCrashBeforeRename) {
      errno = EINTR;  // stands for "the process died here"
      crashed_ = true;
      return -1;
    }
    return FileOps::rename(from, to);
  }
  int unlink(const char* p) override {
    if (crashed_) return 0;  // a dead process cleans nothing up
    return FileOps::unlink(p);
  }
  int writes_ = 0;

 private:
  Fault fault_;
  bool crashed_ = false;
};

struct FaultCase {
  FaultyOps::Fault fault;
  const char* expected_message;
};

TEST_F(StateFileTest, PreviousGoodFileSurvivesEveryFault) {
  const FaultCase cases[] = {
      {FaultyOps::Fault::kOpenFails, "Permission denied"},
      {FaultyOps::Fault::kEnospcMidway, "No space left"},
      {FaultyOps::Fault::kEio, "Input/output error"},
      {FaultyOps::Fault::kFsyncFails, "cannot fsync"},
      {FaultyOps::Fault::kCrashBeforeRename, "cannot rename"},
  };
  for (const auto& c : cases) {
    ASSERT_TRUE(write_file_atomically(path_, bytes("good old state")).ok());
    FaultyOps ops(c.fault);
    auto r = write_file_atomically(path_, bytes("new state that must not half-appear"), ops);
    ASSERT_FALSE(r.ok()) << static_cast<int>(c.fault);
    EXPECT_NE(r.error().message.find(c.expected_message), std::string::npos) << r.error().message;
    EXPECT_EQ(read(path_), "good old state") << static_cast<int>(c.fault);
    if (c.fault != FaultyOps::Fault::kCrashBeforeRename) {
      EXPECT_FALSE(fs::exists(temp_path_for(path_))) << static_cast<int>(c.fault);
    }
  }
  // After the "crash" a leftover temp file exists; the next save overwrites it.
  ASSERT_TRUE(write_file_atomically(path_, bytes("recovered")).ok());
  EXPECT_EQ(read(path_), "recovered");
  EXPECT_FALSE(fs::exists(temp_path_for(path_)));
}

TEST_F(StateFileTest, ShortWritesAreCompleted) {
  FaultyOps ops(FaultyOps::Fault::kShortWrites);
  ASSERT_TRUE(write_file_atomically(path_, bytes("a fairly long payload"), ops).ok());
  EXPECT_EQ(read(path_), "a fairly long payload");
  EXPECT_GT(ops.writes_, 5);
}

TEST_F(StateFileTest, UnwritableDirectory) {
  auto r = write_file_atomically(dir_ + "/missing-dir/gpufair.state", bytes("x"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("cannot create"), std::string::npos);
}

}  // namespace
}  // namespace gpufair
