#include "loops/scheduler.hpp"
