#include "loops/artifacts.hpp"
