// Socket activation (issue 14) end to end: the test plays systemd's part for
// looprd.socket — it binds and listens on the control socket itself, then
// starts the real looprd with that socket as fd 3, LISTEN_FDS=1 and
// LISTEN_PID=looprd's pid — and a client gets answers on it. Sockets that are
// not what looprd.socket declares are refused with a clear message, and
// LISTEN_* meant for another process are ignored.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "tests/daemon/daemon_harness.hpp"

namespace loopr::test {
namespace {

// A Unix socket of `type` bound to `path`; listening when `listen` is set.
UniqueFd bound_socket(const std::string& path, int type, bool listen) {
  UniqueFd fd(::socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, sizeof address.sun_path - 1);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0) << path;
  if (listen) {
    EXPECT_EQ(::listen(fd.get(), 16), 0);
  }
  return fd;
}

std::string folder_of(const std::string& path) {
  return path.substr(0, path.rfind('/'));
}

// What systemd does for ListenStream=PATH, DirectoryMode=0700, SocketMode=0600.
UniqueFd systemd_socket(const std::string& path, int type = SOCK_STREAM, bool listen = true) {
  ::mkdir(folder_of(path).c_str(), 0700);
  const mode_t old_mask = ::umask(0177);
  UniqueFd fd = bound_socket(path, type, listen);
  ::umask(old_mask);
  return fd;
}

bool is_socket(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

std::string exit_text(int status) {
  return WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                           : "signal " + std::to_string(WTERMSIG(status));
}

TEST(SocketActivation, LooprdServesTheSocketSystemdPassedAndLeavesItToSystemd) {
  DaemonHarness daemon;
  UniqueFd listener = systemd_socket(daemon.socket_path());
  ASSERT_TRUE(listener);
  // A client that connected before looprd ran (the first looprctl call, on
  // which systemd starts looprd) waits in the socket's backlog and is served.
  RawConnection early(daemon.socket_path());
  early.send(request_line(1, "initialize", {{"client", "early"}, {"version", 1}}));
  early.send(request_line(2, "ping"));

  daemon.activate_with(listener.get());
  daemon.start();
  ASSERT_TRUE(daemon.running());
  auto initialized = early.receive();
  ASSERT_TRUE(initialized) << daemon.log();
  EXPECT_EQ((*initialized)["id"], 1);
  EXPECT_TRUE(initialized->contains("result")) << initialized->dump();
  auto pong = early.receive();
  ASSERT_TRUE(pong) << daemon.log();
  EXPECT_EQ((*pong)["id"], 2);
  EXPECT_EQ((*pong)["result"]["pong"], true) << pong->dump();
  // A client connecting now, through ControlClient like looprctl.
  EXPECT_EQ(daemon.call("ping")["pong"], true);
  EXPECT_NE(daemon.log().find("socket activation: serving " + daemon.socket_path()),
            std::string::npos)
      << daemon.log();

  // The socket file is systemd's: looprd leaves it, and it still listens.
  EXPECT_EQ(daemon.stop(SIGTERM), 0) << daemon.log();
  EXPECT_TRUE(is_socket(daemon.socket_path()));
  int accepting = 0;
  socklen_t length = sizeof accepting;
  ASSERT_EQ(::getsockopt(listener.get(), SOL_SOCKET, SO_ACCEPTCONN, &accepting, &length), 0);
  EXPECT_EQ(accepting, 1);
  // The next start (systemd's, on the next connection) serves it again.
  daemon.start();
  EXPECT_EQ(daemon.call("ping")["pong"], true);
}

TEST(SocketActivation, WithoutActivationLooprdBindsItsOwnSocketAndRemovesItOnExit) {
  DaemonHarness daemon;
  daemon.start();
  EXPECT_EQ(daemon.call("ping")["pong"], true);
  EXPECT_EQ(daemon.log().find("socket activation"), std::string::npos) << daemon.log();
  EXPECT_EQ(daemon.stop(SIGTERM), 0);
  EXPECT_FALSE(is_socket(daemon.socket_path()));
}

TEST(SocketActivation, ListenPidOfAnotherProcessIsIgnored) {
  DaemonHarness daemon;
  // A socket elsewhere, passed with LISTEN_PID naming another process (the
  // variables leaked from a parent): looprd binds --socket itself instead.
  UniqueFd elsewhere = systemd_socket(daemon.tree().path("other/looprd.sock"));
  ASSERT_TRUE(elsewhere);
  daemon.activate_with(elsewhere.get(), "1", std::to_string(::getpid()));
  daemon.start();
  ASSERT_TRUE(daemon.running());
  EXPECT_EQ(daemon.call("ping")["pong"], true);
  EXPECT_EQ(daemon.log().find("socket activation"), std::string::npos) << daemon.log();
  EXPECT_EQ(daemon.stop(SIGTERM), 0);
  EXPECT_FALSE(is_socket(daemon.socket_path()));  // its own: removed on exit
}

// looprd refuses to start (exit 1) and says why on stderr.
void expect_refusal(DaemonHarness& daemon, const std::string& reason) {
  const int status = daemon.start_expecting_refusal();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << exit_text(status) << "\n"
                                                             << daemon.log();
  EXPECT_NE(daemon.log().find(reason), std::string::npos) << daemon.log();
  EXPECT_FALSE(is_socket(daemon.socket_path()));  // and bound nothing itself
}

TEST(SocketActivation, AFileAsFd3IsRefused) {
  DaemonHarness daemon;
  daemon.tree().write("not-a-socket", "x");
  UniqueFd file(::open(daemon.tree().path("not-a-socket").c_str(), O_RDONLY | O_CLOEXEC));
  daemon.activate_with(file.get());
  expect_refusal(daemon,
                 "cannot start: socket activation: fd 3 is a regular file; looprd needs a "
                 "listening AF_UNIX stream socket");
}

TEST(SocketActivation, ASocketThatDoesNotListenIsRefused) {
  DaemonHarness daemon;
  UniqueFd bound = systemd_socket(daemon.tree().path("other/looprd.sock"), SOCK_STREAM, false);
  daemon.activate_with(bound.get());
  expect_refusal(daemon, "fd 3 is an AF_UNIX stream socket that does not listen");
}

TEST(SocketActivation, ADatagramSocketIsRefused) {
  DaemonHarness daemon;
  UniqueFd datagram = systemd_socket(daemon.tree().path("other/looprd.sock"), SOCK_DGRAM, false);
  daemon.activate_with(datagram.get());
  expect_refusal(daemon, "fd 3 is an AF_UNIX socket that is not SOCK_STREAM (SOCK_DGRAM)");
}

TEST(SocketActivation, AnInternetSocketIsRefused) {
  DaemonHarness daemon;
  UniqueFd tcp(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_EQ(::listen(tcp.get(), 1), 0);  // bound to an ephemeral port on any address
  daemon.activate_with(tcp.get());
  expect_refusal(daemon, "fd 3 is a socket that is not AF_UNIX");
}

TEST(SocketActivation, MoreThanOneSocketIsRefused) {
  DaemonHarness daemon;
  const std::string systemds = daemon.tree().path("other/looprd.sock");
  UniqueFd listener = systemd_socket(systemds);
  daemon.activate_with(listener.get(), "2");
  expect_refusal(daemon, "socket activation passed LISTEN_FDS=2; looprd takes exactly one socket");
  EXPECT_TRUE(is_socket(systemds));  // systemd's, left alone
}

TEST(SocketActivation, AListenPidThatIsNotANumberIsRefused) {
  DaemonHarness daemon;
  UniqueFd listener = systemd_socket(daemon.tree().path("other/looprd.sock"));
  daemon.activate_with(listener.get(), "1", "12x");
  expect_refusal(daemon, "LISTEN_PID=12x is not a process id");
}

TEST(SocketActivation, ASocketInAFolderOthersCanWriteIsRefused) {
  DaemonHarness daemon;
  UniqueFd listener = systemd_socket(daemon.socket_path());
  ASSERT_EQ(::chmod(folder_of(daemon.socket_path()).c_str(), 0777), 0);
  daemon.activate_with(listener.get());
  const int status = daemon.start_expecting_refusal();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << exit_text(status);
  EXPECT_NE(daemon.log().find("DirectoryMode=0700 in looprd.socket"), std::string::npos)
      << daemon.log();
}

}  // namespace
}  // namespace loopr::test
