// Test helper: the message of the loopr::ConfigError a callable throws.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/error.hpp"

namespace loopr::config::test {

// Returns the ConfigError's message; records a test failure (and returns "")
// when `f` throws nothing or something else.
template <class F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a ConfigError, got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected a ConfigError, nothing was thrown";
  return {};
}

// A file with one mistake, for the table-driven tests of a reader's
// messages: the file's text, the message's start ("loopr.toml:LINE: KEY:"),
// and part of its explanation.
struct Mistake {
  const char* text;
  const char* prefix;
  const char* fragment;
};

}  // namespace loopr::config::test
