#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#include "tui/terminal.hpp"

#include <fcntl.h>
#include <ncursesw/curses.h>
#include <termios.h>
#include <unistd.h>

#include <clocale>
#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "tui/text_width.hpp"

namespace loopr::tui {
namespace {

// Written once before the handlers are installed, read by them only.
struct termios g_saved_termios;
bool g_have_termios = false;
int g_quit_pipe[2] = {-1, -1};

void on_quit_signal(int) {
  const int saved = errno;
  const char byte = 'q';
  [[maybe_unused]] const auto written = ::write(g_quit_pipe[1], &byte, 1);
  errno = saved;
}

void on_crash_signal(int signal) {
  if (g_have_termios) ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &g_saved_termios);
  // Leave the alternate screen, reset attributes, show the cursor, leave
  // keypad mode.
  static const char kReset[] = "\033[?1049l\033[0m\033[?25h\033[?1l\033>\r\n";
  [[maybe_unused]] const auto written = ::write(STDOUT_FILENO, kReset, sizeof kReset - 1);
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

void install_handlers() {
  if (::pipe2(g_quit_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
    throw std::runtime_error("cannot create the signal pipe");
  struct sigaction quit {};
  quit.sa_handler = on_quit_signal;
  sigemptyset(&quit.sa_mask);
  quit.sa_flags = SA_RESTART;
  for (const int signal : {SIGTERM, SIGHUP, SIGINT})
    ::sigaction(signal, &quit, nullptr);
  struct sigaction crash {};
  crash.sa_handler = on_crash_signal;
  sigemptyset(&crash.sa_mask);
  crash.sa_flags = static_cast<int>(SA_RESETHAND);
  for (const int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
    ::sigaction(signal, &crash, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

// Colour pairs by Style (pair number = style + 1).
struct Look {
  short fg;
  short bg;
  attr_t mono;    // the attribute without colour
  attr_t colour;  // added to the colour pair
};

Look look_of(Style style) {
  switch (style) {
    case Style::normal:
      return {-1, -1, A_NORMAL, A_NORMAL};
    case Style::dim:
      return {-1, -1, A_DIM, A_DIM};
    case Style::bold:
      return {-1, -1, A_BOLD, A_BOLD};
    case Style::title:
      return {COLOR_CYAN, -1, A_BOLD, A_BOLD};
    case Style::selected:
      return {COLOR_BLACK, COLOR_CYAN, A_REVERSE, A_NORMAL};
    case Style::good:
      return {COLOR_GREEN, -1, A_NORMAL, A_NORMAL};
    case Style::bad:
      return {COLOR_RED, -1, A_BOLD, A_BOLD};
    case Style::warn:
      return {COLOR_YELLOW, -1, A_BOLD, A_BOLD};
    case Style::active:
      return {COLOR_BLUE, -1, A_NORMAL, A_BOLD};
    case Style::tab:
      return {-1, -1, A_NORMAL, A_NORMAL};
    case Style::tab_active:
      return {COLOR_BLACK, COLOR_WHITE, A_REVERSE, A_BOLD};
    case Style::input:
      return {-1, -1, A_BOLD, A_BOLD};
    case Style::added:
      return {COLOR_GREEN, -1, A_BOLD, A_NORMAL};
    case Style::removed:
      return {COLOR_RED, -1, A_DIM, A_NORMAL};
  }
  return {-1, -1, A_NORMAL, A_NORMAL};
}

constexpr Style kStyles[] = {Style::normal,   Style::dim,    Style::bold,       Style::title,
                             Style::selected, Style::good,   Style::bad,        Style::warn,
                             Style::active,   Style::tab,    Style::tab_active, Style::input,
                             Style::added,    Style::removed};

short pair_of(Style style) {
  return static_cast<short>(static_cast<int>(style) + 1);
}

std::wstring wide(std::string_view text) {
  std::wstring out;
  for (const char32_t c : decode_utf8(text)) {
    // wcwidth < 0: not printable in this locale; drawn as U+FFFD.
    out.push_back(::wcwidth(static_cast<wchar_t>(c)) < 0 ? L'\uFFFD' : static_cast<wchar_t>(c));
  }
  return out;
}

}  // namespace

Terminal::Terminal() {
  std::setlocale(LC_ALL, "");
  if (::isatty(STDIN_FILENO) == 0 || ::isatty(STDOUT_FILENO) == 0)
    throw std::runtime_error("loopr-tui needs a terminal on stdin and stdout");
  if (::tcgetattr(STDIN_FILENO, &g_saved_termios) == 0) g_have_termios = true;
  install_handlers();
  ::set_escdelay(25);
  if (::initscr() == nullptr) throw std::runtime_error("cannot start ncurses on this terminal");
  ::raw();
  ::noecho();
  ::nonl();
  ::keypad(stdscr, TRUE);
  ::nodelay(stdscr, TRUE);
  ::curs_set(0);
  const char* no_color = std::getenv("NO_COLOR");
  if ((no_color == nullptr || *no_color == '\0') && ::has_colors()) {
    ::start_color();
    ::use_default_colors();
    colours_ = true;
    for (const Style style : kStyles) {
      const Look look = look_of(style);
      ::init_pair(pair_of(style), look.fg, look.bg);
    }
  }
}

Terminal::~Terminal() {
  ::endwin();
  g_have_termios = false;
  // The screen is the person's again: Ctrl-C while the link's threads wind
  // down ends the program as any other would.
  for (const int signal : {SIGTERM, SIGHUP, SIGINT})
    std::signal(signal, SIG_DFL);
}

int Terminal::quit_fd() {
  return g_quit_pipe[0];
}

ScreenSize Terminal::size() const {
  int rows = 0, columns = 0;
  getmaxyx(stdscr, rows, columns);
  return {static_cast<std::size_t>(std::max(columns, 1)),
          static_cast<std::size_t>(std::max(rows, 1))};
}

void Terminal::draw(const Lines& lines) {
  const ScreenSize screen = size();
  ::werase(stdscr);
  const auto attributes = [&](Style style) -> attr_t {
    const Look look = look_of(style);
    return colours_ ? (COLOR_PAIR(pair_of(style)) | look.colour) : look.mono;
  };
  for (std::size_t y = 0; y < lines.size() && y < screen.height; ++y) {
    const Line& line = lines[y];
    const bool filled = line.fill != Style::normal;
    std::size_t x = 0;
    for (const auto& span : line.spans) {
      if (x >= screen.width) break;
      const std::string text = clip_to_width(span.text, screen.width - x);
      const std::wstring characters = wide(text);
      ::wattrset(stdscr, static_cast<int>(filled ? attributes(line.fill) : attributes(span.style)));
      mvwaddnwstr(stdscr, static_cast<int>(y), static_cast<int>(x), characters.c_str(),
                  static_cast<int>(characters.size()));
      x += display_width(text);
    }
    if (filled && x < screen.width) {
      ::wattrset(stdscr, static_cast<int>(attributes(line.fill)));
      // The last cell of the last row cannot be written without scrolling.
      const std::size_t end = y + 1 == screen.height ? screen.width - 1 : screen.width;
      for (; x < end; ++x)
        mvwaddch(stdscr, static_cast<int>(y), static_cast<int>(x), ' ');
    }
  }
  ::wattrset(stdscr, A_NORMAL);
  ::wnoutrefresh(stdscr);
  ::doupdate();
}

std::vector<Key> Terminal::read_keys() {
  std::vector<Key> keys;
  for (;;) {
    wint_t ch = 0;
    const int kind = ::wget_wch(stdscr, &ch);
    if (kind == ERR) break;
    if (kind == KEY_CODE_YES) {
      switch (ch) {
        case KEY_UP:
          keys.push_back(Key::of(KeyCode::up));
          break;
        case KEY_DOWN:
          keys.push_back(Key::of(KeyCode::down));
          break;
        case KEY_LEFT:
          keys.push_back(Key::of(KeyCode::left));
          break;
        case KEY_RIGHT:
          keys.push_back(Key::of(KeyCode::right));
          break;
        case KEY_PPAGE:
          keys.push_back(Key::of(KeyCode::page_up));
          break;
        case KEY_NPAGE:
          keys.push_back(Key::of(KeyCode::page_down));
          break;
        case KEY_HOME:
          keys.push_back(Key::of(KeyCode::home));
          break;
        case KEY_END:
          keys.push_back(Key::of(KeyCode::end));
          break;
        case KEY_ENTER:
          keys.push_back(Key::of(KeyCode::enter));
          break;
        case KEY_BTAB:
          keys.push_back(Key::of(KeyCode::back_tab));
          break;
        case KEY_BACKSPACE:
          keys.push_back(Key::of(KeyCode::backspace));
          break;
        case KEY_RESIZE:
          keys.push_back(Key::of(KeyCode::resize));
          break;
        default:
          break;
      }
      continue;
    }
    switch (ch) {
      case 3:
        keys.push_back(Key::of(KeyCode::ctrl_c));
        break;
      case 4:
        keys.push_back(Key::of(KeyCode::ctrl_d));
        break;
      case 21:
        keys.push_back(Key::of(KeyCode::ctrl_u));
        break;
      case 9:
        keys.push_back(Key::of(KeyCode::tab));
        break;
      case 10:
      case 13:
        keys.push_back(Key::of(KeyCode::enter));
        break;
      case 27:
        keys.push_back(Key::of(KeyCode::escape));
        break;
      case 8:
      case 127:
        keys.push_back(Key::of(KeyCode::backspace));
        break;
      default:
        if (ch >= 0x20) keys.push_back(Key::of(static_cast<char32_t>(ch)));
        break;
    }
  }
  return keys;
}

}  // namespace loopr::tui
