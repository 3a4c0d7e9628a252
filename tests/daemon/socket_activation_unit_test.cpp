// take_activation_socket() in this process: what it takes, and that it always
// removes LISTEN_* from the environment so looprd's children never see them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "daemon/socket_activation.hpp"

namespace loopr::daemon {
namespace {

// Puts `fd` at fd 3 for the test and restores whatever fd 3 was afterwards.
class Fd3 {
 public:
  explicit Fd3(int fd) {
    if (::fcntl(3, F_GETFD) >= 0) saved_.reset(::fcntl(3, F_DUPFD_CLOEXEC, 10));
    EXPECT_EQ(::dup2(fd, 3), 3);  // without FD_CLOEXEC, as systemd passes it
  }
  ~Fd3() {
    if (saved_) {
      ::dup2(saved_.get(), 3);
    } else {
      ::close(3);
    }
  }

 private:
  UniqueFd saved_;
};

UniqueFd listening_socket() {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};  // autobind: an abstract name
  address.sun_family = AF_UNIX;
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(sa_family_t)), 0);
  EXPECT_EQ(::listen(fd.get(), 1), 0);
  return fd;
}

bool unset(const char* name) {
  return std::getenv(name) == nullptr;
}

TEST(TakeActivationSocket, TakesFd3ForThisPidAndClearsTheEnvironment) {
  UniqueFd listener = listening_socket();
  Fd3 fd3(listener.get());
  ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
  ::setenv("LISTEN_FDS", "1", 1);
  ::setenv("LISTEN_FDNAMES", "looprd.socket", 1);
  auto taken = take_activation_socket();
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->get(), 3);
  EXPECT_NE(::fcntl(3, F_GETFD) & FD_CLOEXEC, 0);
  EXPECT_TRUE(unset("LISTEN_PID") && unset("LISTEN_FDS") && unset("LISTEN_FDNAMES"));
  EXPECT_EQ(bound_path(taken->get()).front(), '@');  // autobound: abstract
  taken->release();                                  // ~Fd3 restores fd 3
}

TEST(TakeActivationSocket, IgnoresAnotherPidsVariablesButStillClearsThem) {
  ::setenv("LISTEN_PID", std::to_string(::getppid()).c_str(), 1);
  ::setenv("LISTEN_FDS", "1", 1);
  EXPECT_FALSE(take_activation_socket());
  EXPECT_TRUE(unset("LISTEN_PID") && unset("LISTEN_FDS"));
}

TEST(TakeActivationSocket, NoListenPidIsNoActivation) {
  ::unsetenv("LISTEN_PID");
  ::setenv("LISTEN_FDS", "1", 1);
  EXPECT_FALSE(take_activation_socket());
  EXPECT_TRUE(unset("LISTEN_FDS"));
}

TEST(TakeActivationSocket, RefusesAPipeAndClearsTheEnvironment) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  Fd3 fd3(read_end.get());
  ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
  ::setenv("LISTEN_FDS", "1", 1);
  try {
    (void)take_activation_socket();
    ADD_FAILURE() << "a pipe at fd 3 was taken";
  } catch (const StartupError& e) {
    EXPECT_NE(std::string(e.what()).find("fd 3 is a pipe"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(unset("LISTEN_PID") && unset("LISTEN_FDS"));
}

TEST(TakeActivationSocket, RefusesZeroOrSeveralFds) {
  for (const char* count : {"0", "2", "", "1x", "-1"}) {
    ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
    ::setenv("LISTEN_FDS", count, 1);
    EXPECT_THROW((void)take_activation_socket(), StartupError) << "LISTEN_FDS=" << count;
    EXPECT_TRUE(unset("LISTEN_PID") && unset("LISTEN_FDS"));
  }
}

}  // namespace
}  // namespace loopr::daemon
