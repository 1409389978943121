//! What every command handler works with: the decoded command ([`Cmd`]),
//! its result ([`Outcome`]), the zeroed output buffer ([`ok`]) and the
//! `require!` check that fails the command.

use bareverbs::cmd::caps::HcaCaps;
use bareverbs::cmd::layout::cmd_in;
use bareverbs::cmd::CmdStatus;

/// A command as its handler reads it: the input, the output length the
/// driver allows, and the header fields most commands use.
#[derive(Clone, Copy)]
pub(super) struct Cmd<'a> {
    /// The whole input (inline part and mailbox data).
    pub(super) input: &'a [u8],
    /// Output length of the entry.
    pub(super) outlen: usize,
    /// `opcode` ([`cmd_in::OPCODE`], input bytes 0..2).
    pub(super) opcode: u16,
    /// `op_mod` ([`cmd_in::OP_MOD`], input bytes 6..8).
    pub(super) op_mod: u16,
    /// The object number most commands name ([`cmd_in::OBJ_ID`], input
    /// dword 2 bits 23..0).
    pub(super) id: u32,
    /// The current capabilities when the command arrived.
    pub(super) cur: HcaCaps,
}

impl<'a> Cmd<'a> {
    /// Decodes the header of `input` against the current capabilities
    /// image `cur_caps`.
    pub(super) fn decode(input: &'a [u8], outlen: usize, cur_caps: &[u8]) -> Self {
        Cmd {
            input,
            outlen,
            opcode: cmd_in::OPCODE.get(input, 0) as u16,
            op_mod: cmd_in::OP_MOD.get(input, 0) as u16,
            id: cmd_in::OBJ_ID.get(input, 0),
            cur: HcaCaps::parse(cur_caps),
        }
    }

    /// Whether the input holds at least `n` bytes.
    pub(super) fn need_in(&self, n: usize) -> bool {
        self.input.len() >= n
    }
}

/// What a handler did with a command.
pub(super) enum Outcome {
    /// Completed; the output (its status byte says how).
    Ok(Vec<u8>),
    /// Failed with this status for this [`reason`](super::reason).
    Fail(CmdStatus, u8),
    /// Short of this many pages: wait for them or fail.
    NeedPages(u32),
}

/// A zeroed output of `len` bytes (at least the 16-byte header).
pub(super) fn ok(len: usize) -> Vec<u8> {
    vec![0u8; len.max(16)]
}

/// Fails the command with `($status, $reason)` unless `$cond` holds.
macro_rules! require {
    ($c:expr, $s:expr, $r:expr) => {
        if !$c {
            return $crate::fw::handler::Outcome::Fail($s, $r);
        }
    };
}
pub(super) use require;
