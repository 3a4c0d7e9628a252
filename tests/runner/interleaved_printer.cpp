// loopr-interleaved-printer N: prints "out I" on stdout and "err I" on
// stderr, alternately, for I = 1..N. After each line it waits until the
// reader has emptied that pipe (FIONREAD on the pipe's write end, Linux),
// so a reader polling both pipes reads the lines in the order they were
// printed, which is what the command tools' merged `output` is tested on.
// Exit status 0; 2 on a usage error; 3 when fd 1 or 2 is not a pipe; 4 when
// a line was not read within 20 s.
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

namespace {

bool is_pipe(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
}

// True once `fd`'s pipe is empty; false after 20 s.
bool wait_until_read(int fd) {
  const timespec tick{0, 1'000'000};
  for (int i = 0; i < 20'000; ++i) {
    int unread = 0;
    if (::ioctl(fd, FIONREAD, &unread) != 0) return false;
    if (unread == 0) return true;
    ::nanosleep(&tick, nullptr);
  }
  return false;
}

bool print(int fd, const std::string& line) {
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return wait_until_read(fd);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: loopr-interleaved-printer N\n");
    return 2;
  }
  if (!is_pipe(1) || !is_pipe(2)) return 3;
  const int count = std::atoi(argv[1]);
  for (int i = 1; i <= count; ++i) {
    if (!print(1, "out " + std::to_string(i) + "\n")) return 4;
    if (!print(2, "err " + std::to_string(i) + "\n")) return 4;
  }
  return 0;
}
