#include "loops/merges.hpp"

#include <gtest/gtest.h>
