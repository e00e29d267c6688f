#include "gatekeeper_plugin.h"
