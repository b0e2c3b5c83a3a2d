// SPDX-License-Identifier: GPL-2.0-only
/* The tracepoints of include/trace/events/erofs_rs.h, with their Rust entry points (vfs/trace.rs). */
#define CREATE_TRACE_POINTS
#define CREATE_RUST_TRACE_POINTS
#include <trace/events/erofs_rs.h>
