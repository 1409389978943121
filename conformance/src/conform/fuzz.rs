//! Fuzz body `vector_files`: a vector file is user input too (`bareverbs
//! conform FILE`), so any bytes must give a report or an error, never a
//! panic, and must not make the tool build queues or buffers larger than
//! the file's own cases can name.

use super::exec::{RecvQueueExecutor, SqExecutor};

/// The fuzz body: the bytes (lossily decoded as UTF-8) run through
/// [`super::run_text`] with the real executors (bareverbs' post paths).
pub fn vector_files(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = super::run_text(
        "fuzz",
        &text,
        &mut std::io::sink(),
        &mut SqExecutor,
        &mut RecvQueueExecutor,
    );
}
