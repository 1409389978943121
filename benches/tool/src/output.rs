//! The tool's stdout and stderr.
//!
//! Everything the tool prints goes through here: [`out!`](crate::out) and
//! [`outln!`](crate::outln) in place of `print!`/`println!`, [`stdout`]
//! where a [`Write`] is wanted (streamed rows, `conform`'s report), and
//! [`eoutln!`](crate::eoutln) in place of `eprintln!`.
//!
//! A reader that has gone away (`bareverbs … | head`) is the end of the
//! run, not a failure: the first write that finds stdout's pipe closed
//! ends the process with status 0 and prints nothing more. (The standard
//! library ignores SIGPIPE in Rust programs, so the write fails with
//! `BrokenPipe` instead of the signal killing the process; `println!`
//! would then panic, exit 101.) Any other stdout error is reported on
//! stderr and exits 1. A failing stderr is ignored: there is nowhere left
//! to say so.
//!
//! The crate denies `clippy::print_stdout` and `clippy::print_stderr`, and
//! `clippy.toml` disallows `std::io::stdout`/`std::io::stderr` outside this
//! module, so output cannot bypass it.
#![allow(clippy::disallowed_methods)]

use std::io::{self, Write};

/// What a failed stdout write means: a closed pipe ends the process with
/// status 0, quietly; anything else is reported and exits 1.
fn stdout_failed(e: &io::Error) -> ! {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    let _ = writeln!(io::stderr(), "error: writing to stdout: {e}");
    std::process::exit(1);
}

/// Ends the process if `r` says stdout's reader has gone (status 0);
/// otherwise passes `r` on.
fn closed_pipe_exits<T>(r: io::Result<T>) -> io::Result<T> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => stdout_failed(&e),
        r => r,
    }
}

/// The process's stdout (locked while this lives) as a [`Write`] whose
/// writes end the process with status 0 when the reader has gone; other
/// errors are returned.
#[derive(Debug)]
pub struct Stdout(io::StdoutLock<'static>);

/// Locks stdout for writing (see [`Stdout`]).
pub fn stdout() -> Stdout {
    Stdout(io::stdout().lock())
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        closed_pipe_exits(self.0.write(buf))
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        closed_pipe_exits(self.0.write_all(buf))
    }
    fn flush(&mut self) -> io::Result<()> {
        closed_pipe_exits(self.0.flush())
    }
}

/// Whether stderr is a terminal (the sweep's redrawn progress bar).
pub fn stderr_is_terminal() -> bool {
    use std::io::IsTerminal as _;
    io::stderr().is_terminal()
}

/// `print!`'s work for [`out!`](crate::out): `args` to stdout, ending the
/// process as [`Stdout`] says on failure.
#[doc(hidden)]
pub fn print_fmt(args: std::fmt::Arguments<'_>) {
    if let Err(e) = stdout().write_fmt(args) {
        stdout_failed(&e);
    }
}

/// `eprint!`'s work for [`eoutln!`](crate::eoutln): `args` to stderr, and
/// flushed; a failure is ignored.
#[doc(hidden)]
pub fn eprint_fmt(args: std::fmt::Arguments<'_>) {
    let mut e = io::stderr().lock();
    let _ = e.write_fmt(args);
    let _ = e.flush();
}

/// `print!` for the tool: to stdout, a closed pipe ending the process with
/// status 0 ([`output`](crate::output)).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::print_fmt(::std::format_args!($($arg)*))
    };
}

/// `println!` for the tool: to stdout, a closed pipe ending the process
/// with status 0 ([`output`](crate::output)).
#[macro_export]
macro_rules! outln {
    () => {
        $crate::output::print_fmt(::std::format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::print_fmt(::std::format_args!("{}\n", ::std::format_args!($($arg)*)))
    };
}

/// `eprintln!` for the tool: to stderr, a failure ignored
/// ([`output`](crate::output)).
#[macro_export]
macro_rules! eoutln {
    ($($arg:tt)*) => {
        $crate::output::eprint_fmt(::std::format_args!("{}\n", ::std::format_args!($($arg)*)))
    };
}

/// `eprint!` for the tool: to stderr, a failure ignored
/// ([`output`](crate::output)).
#[macro_export]
macro_rules! eout {
    ($($arg:tt)*) => {
        $crate::output::eprint_fmt(::std::format_args!($($arg)*))
    };
}
