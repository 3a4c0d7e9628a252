#include "loops/artifacts.hpp"

#include <gtest/gtest.h>
