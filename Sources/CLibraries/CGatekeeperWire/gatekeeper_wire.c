/* The wire format is constants only (include/gatekeeper_wire.h); SwiftPM builds a C target from a source. */
#include "gatekeeper_wire.h"
