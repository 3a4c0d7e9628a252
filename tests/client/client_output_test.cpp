// Pure parts of looprctl: exit statuses per failure category, terminal-safe
// text, durations, sizes, tables.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <sstream>

#include "client/failure.hpp"
#include "client/text_format.hpp"
#include "common/utf8.hpp"

namespace loopr::client {
namespace {

using nlohmann::json;

Error rpc(int code) {
  Error error = make_error(failure::rpc_error, "refused");
  error.details = {{"rpc_code", code}, {"method", "x"}, {"data", nullptr}};
  return error;
}

TEST(ExitStatus, EachFailureCategoryHasItsExitStatus) {
  EXPECT_EQ(exit_status_for(make_error(failure::daemon_unreachable, "")), ExitStatus::unreachable);
  EXPECT_EQ(exit_status_for(make_error(errc::timeout, "")), ExitStatus::unreachable);
  EXPECT_EQ(exit_status_for(make_error(errc::io, "")), ExitStatus::unreachable);
  EXPECT_EQ(exit_status_for(make_error(failure::version_mismatch, "")), ExitStatus::protocol);
  EXPECT_EQ(exit_status_for(make_error(errc::protocol, "")), ExitStatus::protocol);
  EXPECT_EQ(exit_status_for(make_error(failure::usage, "")), ExitStatus::usage);
  EXPECT_EQ(exit_status_for(make_error(errc::not_found, "")), ExitStatus::call_failed);
  EXPECT_EQ(exit_status_for(rpc(1004)), ExitStatus::protocol);
  EXPECT_EQ(exit_status_for(rpc(-32601)), ExitStatus::protocol);
  EXPECT_EQ(exit_status_for(rpc(-32600)), ExitStatus::protocol);
  EXPECT_EQ(exit_status_for(rpc(-32602)), ExitStatus::call_failed);
  EXPECT_EQ(exit_status_for(rpc(1001)), ExitStatus::call_failed);
}

TEST(ExitStatus, ProtocolFailuresArePrintedAsProtocolErrors) {
  std::ostringstream err;
  print_failure(err, make_error(errc::protocol, "bad line", "use the matching looprctl"));
  EXPECT_EQ(err.str(), "looprctl: protocol error: bad line\nhint: use the matching looprctl\n");
}

TEST(TextFormat, PrintableEscapesTerminalControls) {
  EXPECT_EQ(printable("a\x1b[31mb"), "a\\x1b[31mb");
  EXPECT_EQ(printable("tab\there"), "tab here");
  EXPECT_EQ(printable("new\nline\x7f"), "new\\x0aline\\x7f");
  EXPECT_EQ(printable("c1 \xc2\x9b end"), "c1 \\x9b end");
  EXPECT_EQ(printable("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(printable("bad \xff"), "bad \xef\xbf\xbd");
}

TEST(TextFormat, PrintableLinesKeepsNewlinesAndEscapesTheRest) {
  EXPECT_EQ(printable_lines("line 1\n     5|\treturn 0;\n\x1b[2J"),
            "line 1\n     5| return 0;\n\\x1b[2J");
  EXPECT_EQ(printable_lines("no newline"), "no newline");
  EXPECT_EQ(printable_lines("ends\n"), "ends\n");
}

TEST(TextFormat, CellRendersAnyValueOnOneLine) {
  const json object = {{"s", "x"}, {"n", 3}, {"b", true}, {"a", {1, 2}}, {"z", nullptr}};
  EXPECT_EQ(cell(object, "s"), "x");
  EXPECT_EQ(cell(object, "n"), "3");
  EXPECT_EQ(cell(object, "b"), "yes");
  EXPECT_EQ(cell(object, "a"), "[1,2]");
  EXPECT_EQ(cell(object, "z"), "-");
  EXPECT_EQ(cell(object, "missing"), "-");
  EXPECT_EQ(cell(json::array(), "s"), "-");
}

TEST(TextFormat, DurationsReadNaturally) {
  EXPECT_EQ(format_duration_ms(0), "0 ms");
  EXPECT_EQ(format_duration_ms(0.4), "0.4 ms");
  EXPECT_EQ(format_duration_ms(250), "250 ms");
  EXPECT_EQ(format_duration_ms(1500), "1.5 s");
  EXPECT_EQ(format_duration_ms(10000), "10 s");
  EXPECT_EQ(format_duration_ms(120000), "2 min");
  EXPECT_EQ(format_duration_ms(3'900'000), "1 h 5 min");
  EXPECT_EQ(format_duration_ms(299'990), "5 min");
  EXPECT_EQ(format_duration_ms(59'999), "1 min");
  EXPECT_EQ(format_duration_ms(999.97), "1 s");
  EXPECT_EQ(format_duration_ms(-1), "-");
  EXPECT_EQ(format_duration_ms("10"), "-");
}

TEST(TextFormat, SizesUseBinaryUnits) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(4096), "4.0 KiB");
  EXPECT_EQ(format_bytes(12.5 * 1024 * 1024), "12.5 MiB");
  EXPECT_EQ(format_bytes(nullptr), "-");
}

TEST(TextFormat, TableAlignsColumnsAndCutsLongCells) {
  TextTable table({"NAME", "LANE"});
  table.add_row({"read_file", "no-net"});
  table.add_row({std::string(100, 'x'), "net"});
  std::ostringstream out;
  table.print(out);
  std::istringstream lines(out.str());
  std::string header, first, second;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_EQ(header.find("LANE"), first.find("no-net"));
  EXPECT_EQ(second, std::string(TextTable::kMaxCellWidth - 3, 'x') + "...  net");
}

}  // namespace
}  // namespace loopr::client

namespace loopr::client {
namespace {

RC_GTEST_PROP(TextFormatProperty, PrintableNeverEmitsTerminalControls, (const std::string& text)) {
  const std::string shown = printable(text);
  RC_ASSERT(is_valid_utf8(shown));
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const auto byte = static_cast<unsigned char>(shown[i]);
    RC_ASSERT(byte >= 0x20);
    RC_ASSERT(byte != 0x7F);
    const bool c1 =
        byte == 0xC2 && i + 1 < shown.size() && static_cast<unsigned char>(shown[i + 1]) <= 0x9F;
    RC_ASSERT(!c1);
  }
}

}  // namespace
}  // namespace loopr::client
