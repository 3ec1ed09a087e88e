#include "util/log.h"
