//! Memory keys ([ref §7.12](bareverbs::reference)): CREATE_MKEY (MTT
//! access, page-size alignment, the reach of the key mapped) and
//! DESTROY_MKEY.

use super::handler::{ok, require, Cmd, Outcome};
use super::objects::{MkeyObj, ObjectEvent};
use super::status::reason;
use super::SimFirmware;
use bareverbs::cmd::bits::get64;
use bareverbs::cmd::layout::{cmd_in, create_mkey_in, mkc};
use bareverbs::cmd::ops::{self, MKC, PAS_OFFSET};
use bareverbs::cmd::CmdStatus;
use bareverbs::wqe::MkeyAccess;
use Outcome::{Fail, NeedPages};

impl SimFirmware {
    /// CREATE_MKEY.
    pub(super) fn create_mkey(&mut self, c: &Cmd) -> Outcome {
        let Cmd { input, cur, .. } = *c;
        if input.len() < PAS_OFFSET {
            return Fail(CmdStatus::BadInputLen, reason::INPUT_LEN);
        }
        let pd = mkc::PD.get(input, MKC);
        if !self.objects.pds.contains_key(&pd) {
            return Fail(CmdStatus::BadResource, reason::UNKNOWN_OBJECT);
        }
        // MTT access with an absolute page size from 4 KiB up to the
        // field's top value (6 bits: 2^63 bytes).
        let log_page = mkc::LOG_PAGE_SIZE.get(input, MKC) as u8;
        if mkc::ACCESS_MODE_1_0.get(input, MKC) != mkc::ACCESS_MODE_MTT
            || log_page < ops::MKEY_LOG_PAGE_MIN
        {
            return Fail(CmdStatus::BadParam, reason::FIELD);
        }
        let len = mkc::LEN.get(input, MKC);
        let start = mkc::START_ADDR.get(input, MKC);
        let npages = (create_mkey_in::TRANSLATIONS_OCTWORD_ACTUAL_SIZE.get(input, 0) as usize) * 2;
        // `start` and `len` are guest-provided: a span that overflows 64
        // bits (or a page count beyond usize) is a bad size, not a panic.
        let Some(need) =
            ops::mkey_pages(start, len, log_page).and_then(|(_, n)| usize::try_from(n).ok())
        else {
            return Fail(CmdStatus::BadParam, reason::SIZE);
        };
        if npages < need || npages > (1 << 20) {
            return Fail(CmdStatus::BadParam, reason::SIZE);
        }
        // The declared octwords must all be in the input: an odd page
        // count is sent with a zero pad entry (the vendor's VFIO provider
        // and kernel size the input `0x110 + 8 · roundup(npages, 2)`). A
        // message shorter than the list it declares is a length error,
        // BAD_INPUT_LEN, the status the PRM gives for an inbox length that
        // does not match the command's content; a strict card reads the
        // missing entry past the end of the message.
        if input.len() < PAS_OFFSET + 8 * npages {
            return Fail(CmdStatus::BadInputLen, reason::INPUT_LEN);
        }
        // Access flags in the MTT entries (bits 0 read, 1 write) take
        // effect only under `pg_access`; entries carrying them while it is
        // clear are an inconsistent field combination, BAD_PARAM (the
        // kernel writes flags only together with `pg_access`, mr.c
        // reg_create; rdma-core mlx5_vfio.c sets both).
        let pg_access = create_mkey_in::PG_ACCESS.get(input, 0) == 1;
        if !pg_access && (0..npages).any(|i| get64(input, PAS_OFFSET + 8 * i) & 0xfff != 0) {
            return Fail(CmdStatus::BadParam, reason::FIELD);
        }
        // Each entry a page-aligned device address; the part of the pages
        // the key reaches (its start offset in the first page, then len
        // bytes, pages contiguous) must be mapped.
        // An entry's low 12 bits are flags; the address bits between the
        // 4 KiB boundary and the page size must be zero (a page not
        // aligned to its size is a driver bug, refused, not rounded).
        let size = 1u64 << log_page;
        let pas: Vec<u64> = (0..need)
            .map(|i| get64(input, PAS_OFFSET + 8 * i) & !0xfff)
            .collect();
        if pas.iter().any(|&a| a & (size - 1) != 0) {
            return Fail(CmdStatus::BadParam, reason::ADDRESS);
        }
        if let Some(&first) = pas.first() {
            let reach = first
                .checked_add(start & (size - 1))
                .filter(|_| contiguous_step(&pas, size))
                .and_then(|a| usize::try_from(len).ok().map(|l| (a, l)));
            match reach {
                Some((a, l)) if self.mapped(a, l.max(1)) => {}
                _ => return Fail(CmdStatus::BadParam, reason::ADDRESS),
            }
        }
        if self.objects.mkeys.len() as u64 >= 1u64 << cur.log_max_mkey.min(32) {
            return Fail(CmdStatus::ExceedLimit, reason::LIMIT);
        }
        if let Err(n) = self.charge() {
            return NeedPages(n);
        }
        let index = if self.cfg.reuse_mkey_index {
            (1..=0x00ff_ffffu32)
                .find(|i| !self.objects.mkeys.contains_key(i))
                .unwrap_or(0)
        } else {
            self.objects.fresh()
        };
        let m = MkeyObj {
            index,
            variant: mkc::MKEY_7_0.get(input, MKC) as u8,
            pd,
            start,
            len,
            access: MkeyAccess::from_mkc_field(mkc::ACCESS.get(input, MKC)),
            pages: pas,
            log_page_size: log_page,
        };
        if !self.admit(ObjectEvent::MkeyCreated(m.clone())) {
            self.uncharge();
            return Fail(CmdStatus::BadParam, reason::DATA_PATH);
        }
        self.objects.mkeys.insert(index, m);
        let mut o = ok(16);
        cmd_in::OBJ_ID.set(&mut o, 0, index);
        Outcome::Ok(o)
    }

    /// DESTROY_MKEY.
    pub(super) fn destroy_mkey(&mut self, c: &Cmd) -> Outcome {
        let Cmd { id, .. } = *c;
        require!(
            self.objects.mkeys.remove(&id).is_some(),
            CmdStatus::BadResource,
            reason::UNKNOWN_OBJECT
        );
        self.uncharge();
        self.notify(ObjectEvent::MkeyDestroyed(id));
        Outcome::Ok(ok(16))
    }
}

/// Whether `pages` are consecutive pages of `size` bytes in device address
/// space.
fn contiguous_step(pages: &[u64], size: u64) -> bool {
    pages
        .windows(2)
        .all(|w| w[0].checked_add(size) == Some(w[1]))
}
