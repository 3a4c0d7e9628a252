// docs/control-protocol.md is the contract of the control methods: every
// method its tables list has a descriptor in proto/control_methods.hpp and
// every descriptor is documented, and the flags the document states (which
// methods need no initialize, which looprd still takes while shutting down)
// are the descriptors' flags.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "proto/control_methods.hpp"

namespace loopr::proto {
namespace {

std::string read_doc() {
  std::ifstream in(std::string(LOOPR_DOCS_DIR) + "/control-protocol.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first column of every table whose header is "| method | ...".
std::set<std::string> documented_methods(const std::string& doc) {
  static const std::regex row(R"(^\| `([a-z_]+\.?[a-z_.]*)` \|)");
  std::set<std::string> names;
  std::istringstream lines(doc);
  std::string line;
  bool in_method_table = false;
  while (std::getline(lines, line)) {
    if (line.rfind("| method |", 0) == 0) {
      in_method_table = true;
    } else if (line.empty() || line.front() != '|') {
      in_method_table = false;
    } else if (std::smatch match; in_method_table && std::regex_search(line, match, row)) {
      names.insert(match[1]);
    }
  }
  return names;
}

// The `names` in the sentence `pattern` matches (its group 1), the document's
// lines joined with spaces.
std::set<std::string> named_in(const std::string& doc, const std::string& pattern) {
  std::string joined = doc;
  for (char& c : joined)
    if (c == '\n') c = ' ';
  std::smatch sentence;
  if (!std::regex_search(joined, sentence, std::regex(pattern))) return {};
  const std::string part = sentence[1];
  static const std::regex name("`([a-z_.]+)`");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(part.begin(), part.end(), name); it != std::sregex_iterator();
       ++it)
    names.insert((*it)[1]);
  return names;
}

std::set<std::string> registered_methods() {
  std::set<std::string> names;
  for (const MethodInfo& method : kControlMethodInfos)
    names.insert(std::string(method.name));
  return names;
}

TEST(ControlMethodsDoc, EveryDocumentedMethodHasADescriptorAndBack) {
  const std::set<std::string> documented = documented_methods(read_doc());
  ASSERT_FALSE(documented.empty()) << "docs/control-protocol.md unreadable or without tables";
  const std::set<std::string> registered = registered_methods();
  for (const std::string& name : documented)
    EXPECT_TRUE(registered.count(name)) << name << " is documented but has no descriptor";
  for (const std::string& name : registered)
    EXPECT_TRUE(documented.count(name)) << name << " has a descriptor but is not documented";
}

TEST(ControlMethodsDoc, DescriptorNamesAreUnique) {
  EXPECT_EQ(registered_methods().size(), kControlMethodInfos.size());
}

TEST(ControlMethodsDoc, MethodsTakenBeforeInitializeAreTheDocumentedOnes) {
  const std::set<std::string> documented = named_in(
      read_doc(), R"(Every\s+method\s+but\s+(.*?)\s+is\s+refused\s+\(-32600\)\s+before\s+it)");
  ASSERT_FALSE(documented.empty()) << "the document no longer says which methods need initialize";
  std::set<std::string> flagged;
  for (const MethodInfo& method : kControlMethodInfos)
    if (!method.flags.needs_initialize) flagged.insert(std::string(method.name));
  EXPECT_EQ(flagged, documented);
}

TEST(ControlMethodsDoc, MethodsTakenWhileShuttingDownAreTheDocumentedOnes) {
  const std::set<std::string> documented = named_in(
      read_doc(),
      R"(shutting\s+down,\s+every\s+request\s+but\s+(.*?)\s+is\s+answered\s+with\s+an\s+error\s+of\s+code)");
  ASSERT_FALSE(documented.empty()) << "the document no longer says what shutting down refuses";
  std::set<std::string> flagged;
  for (const MethodInfo& method : kControlMethodInfos)
    if (method.flags.allowed_while_shutting_down) flagged.insert(std::string(method.name));
  EXPECT_EQ(flagged, documented);
}

}  // namespace
}  // namespace loopr::proto
