#!/usr/bin/env python3
"""Sorts ThreadSanitizer reports (scripts/tsan.sh) into races between two
accesses in our own code and the rest: hand-offs through Debian's
uninstrumented gRPC/protobuf, whose synchronisation TSan cannot see, so that
memory one thread wrote before a gRPC call and another reads in its callback
looks racy. A race is ours when, on both sides, the first frame outside the
C++ standard library and the sanitizer runtime is in one of our folders
(generated proto code excluded). A thread leak is ours when our code called
pthread_create itself. Any other report kind (lock-order inversion,
use after free, ...) is ours when one of our frames is in it.

Usage: tsan_reports.py <repo root> <log_path prefix>; exit 1 if any is ours."""
import collections, glob, re, sys

# Frames that say nothing about who made the access.
SKIP = re.compile(r'/usr/include/c\+\+/|libsanitizer|libstdc\+\+\.so|libtsan\.so')

# Races between two of our frames that are gRPC hand-offs all the same,
# with the reason (match: both substrings in the report).
KNOWN_HANDOFFS = [
    # The Latch lives in Apply's frame, where a moment before a temporary
    # shared_ptr sat in the same stack slot; the completion callback reaches
    # the latch through the async call that gRPC started (invisible edge).
    ('agent_driver.cc', 'CountDown'),
    # gRPC creates each server interceptor on the thread that accepts the
    # call and destroys it with the ServerContext on another.
    ('~RpcMetricsInterceptor', 'ServerContextBase'),
    # The same for the member's role interceptor: made where the call is
    # accepted, run and destroyed on the threads gRPC hands the call to.
    ('~RoleInterceptor', 'ServerContextBase'),
    ('RoleInterceptorFactory::CreateServerInterceptor', 'set_server_rpc_info'),
    # And for the interceptor that sends a "nothing done" mark as
    # retry-after-ms: made where the call is accepted, destroyed with the
    # ServerContext on the thread that finishes it.
    ('~NothingDoneInterceptor', 'ServerContextBase'),
    # A standby's forwarding reactor: gRPC makes it on the thread that
    # accepts the call and runs its callbacks (and OnDone) on others, one at
    # a time, through its callback handler.
    ('server/ha/forwarder.cc', 'CallbackBidiHandler'),
    # A machine's attach reactor, likewise: made where the Attach call is
    # accepted, its reactions and OnDone (which frees the IPUs) run on the
    # threads gRPC hands the call to, one at a time.
    ('agents/agent_service.cc', 'CallbackServerStreamingHandler'),
]

def first_real_frame(block):
    for frame in re.findall(r'^\s+#\d+ (.*)$', block, re.M):
        if not SKIP.search(frame):
            return frame
    return ''

def ours(frame, roots):
    return any(f'{r}/' in frame for r in roots) and '/proto/' not in frame

def main():
    src = sys.argv[1].rstrip('/')
    roots = [f'{src}/{a}' for a in ('server', 'agents', 'storage', 'fabric', 'model', 'cli', 'poprun')]
    real, other = collections.Counter(), collections.Counter()
    fatal = []
    examples = {}
    for path in sorted(glob.glob(sys.argv[2] + '*')):
        text = open(path, errors='replace').read()
        # exitcode=0 also hides TSan's own fatal errors: find them here.
        fatal += [f'{path}: {line}' for line in re.findall(r'^==\d+==ThreadSanitizer: (.*)$', text, re.M)]
        for rep in text.split('WARNING: ThreadSanitizer: ')[1:]:
            kind = rep.split(' (pid')[0]
            blocks = [b for b in rep.split('\n\n') if re.search(r'^\s+#0 ', b, re.M)][:2]
            tops = [first_real_frame(b) for b in blocks]
            key = (kind,) + tuple(re.sub(r' \(.*', '', t.split(' ', 1)[-1]) for t in tops)
            if kind.startswith('data race'):
                is_ours = len(tops) == 2 and all(ours(t, roots) for t in tops)
            elif kind.startswith('thread leak'):
                # Whoever called pthread_create owns the join: a thread that
                # gRPC's own Thread class started is gRPC's to join.
                is_ours = bool(tops) and ours(tops[0], roots)
            else:  # lock-order inversion, use after free, ...: ours if we are in it
                is_ours = any(ours(f, roots) for f in re.findall(r'^\s+#\d+ (.*)$', rep, re.M))
            if is_ours and any(a in rep and b in rep for a, b in KNOWN_HANDOFFS):
                is_ours = False
            if is_ours:
                real[key] += 1
                examples.setdefault(key, (path, rep[:4000]))
            else:
                other[kind] += 1
    for kind, n in other.items():
        print(f'tsan: {n} {kind} reports inside gRPC/protobuf hand-offs (ignored)')
    for key, n in real.most_common():
        path, rep = examples[key]
        print(f'tsan: OURS x{n}: {key} (first in {path})\n{rep}\n')
    # Again in one line each, last: CI keeps only the end of long output.
    for key, n in real.most_common():
        print(f'tsan: OURS x{n}: {key}')
    for line in fatal:
        print(f'tsan: FATAL {line}')
    if not other and not real:
        print('tsan: no reports at all: was anything instrumented run?')
    return 1 if real or fatal else 0

sys.exit(main())
