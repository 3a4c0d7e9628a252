#include "loops/scheduler.hpp"

#include <gtest/gtest.h>
