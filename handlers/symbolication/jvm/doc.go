// Package jvm is the engine of JVM stack-trace resolution
// (docs/resolution.md): obfuscated Java frames and exception classes
// remapped through the ProGuard mappings a project uploaded, found by the
// UUIDs of the request's proguard modules, inlined methods given back as
// frames of their own. A stack trace is read callee first whatever
// options.frame_order says, as R8's retrace reads one, for R8's mapping
// metadata (errata/worker/dif/proguard): the exception a stack trace
// threw (its "exception", else the request's i-th exception when there
// are as many as stack traces) goes with its top frame for rewriteFrame rules, an outline's frame gives
// its position to the frame that called it and answers nothing of its
// own, and synthesized methods are left out of frames that have a line
// (kept, with method_synthesized, in frames without one), as Sentry's
// symbolicator does.
//
// It owns the request and answer types of the route symbolicate-jvm/ and
// the remapping; the mappings are read through errata/store and parsed by
// errata/worker/dif/proguard, each kept parsed in the MapCache by its
// SHA-1, so that a second request over the same mapping parses nothing.
//
// Budgets, per request: at most symbolication.MaxFrames frames,
// symbolication.MaxModules modules and symbolication.MaxFiles distinct
// mappings (the route checks these before the engine runs); at most
// symbolication.MaxReadBytes (256 MiB) of stored mappings read and parsed,
// a mapping found in the cache costing nothing (*symbolication.LimitError
// beyond); no mapping larger than proguard.MaxSize is read (it answers
// "malformed"). A parsed mapping is charged to the cache and to the
// request's symbolication.Budget (the cache's bound) at what it holds
// (proguard.Mapping.Size, its text included) and parsed within what the
// request has left (proguard.ParseWithin): one larger than the cache
// takes is "malformed", kept so under its SHA-1, one larger than what the
// request has left a *symbolication.LimitError of HeldBytes. The frame
// loop stops once the request's context ends. The frames of a request
// read at most proguard.MaxWork method lines and rules together
// (proguard.Context.Work, names counted by 64 bytes, exceptions' too):
// past it, a frame or an exception is left as it came.
// Answered: each name a frame or an exception takes from a mapping
// (function, module, filename, abs_path, the exception's type and module)
// cut to symbolication.MaxNameBytes (1 KiB, ending with "..."); at most
// symbolication.MaxFrameExpansion (64) frames for one obfuscated frame (its
// inlined methods, or the methods a line is shared by: the first the
// mapping gives, the outermost kept saying how many more it gives in
// frames_omitted, the others never built); and at most
// symbolication.MaxAnswerBytes (32 MiB) of JSON, counted as the frames are
// made (*symbolication.LimitError of AnswerBytes beyond, before the answer
// is written).
package jvm
