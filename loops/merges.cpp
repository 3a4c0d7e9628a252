#include "loops/merges.hpp"
