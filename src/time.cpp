#include "gpufair/time.h"

#include <ctime>

namespace gpufair {

TimePoint SystemClock::now() const { return static_cast<TimePoint>(std::time(nullptr)); }

}  // namespace gpufair
