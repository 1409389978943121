//! API-guideline regressions (issue 28, item 4): every error type is a
//! `core::error::Error` (plus `Debug`, `Display`, `Send`, `Sync`, `Copy`)
//! whose chain names each message once — a context wrapper's `source()`
//! is the lower-layer error it wraps, a transparent wrapper *is* that
//! error (its `Display` and its `source()`), see `bareverbs::error` — and
//! `bareverbs::verbs::Error` takes every error a verbs call returns with
//! `?` — creation, posting (single and batched), receiving and polling.
//!
//! `#[non_exhaustive]`, `#[must_use]` on builders and `Debug` on every
//! public type are lints in `core/src/lib.rs` (`clippy::exhaustive_enums`,
//! `clippy::return_self_not_must_use`, `missing_debug_implementations`),
//! with `compile_fail` doctests on `verbs::Error` and `SendWr::signaled`.

use bareverbs::cmd::initseg::{HealthProblem, InitSegError};
use bareverbs::cmd::ops::IbMtu;
use bareverbs::cmd::pages::PageError;
use bareverbs::cmd::queue::CmdqSetupError;
use bareverbs::cmd::{CmdError, CmdStatus};
use bareverbs::cq::{CqError, PollError};
use bareverbs::cqe::{WcStatus, WorkCompletion};
use bareverbs::device::{DeviceConfig, DeviceError, Step};
use bareverbs::error::{Chain, ParseError};
use bareverbs::qp::{QpState, QpTransitionError, QpType};
use bareverbs::rq::{RecvError, RecvErrorKind};
use bareverbs::selftest::SelfTestError;
use bareverbs::sizing::{qp_layout, DeviceCaps, QpCaps, SizingError};
use bareverbs::sq::{PostError, PostErrorKind, SendOp};
use bareverbs::verbs::{
    self, Access, AddressHandle, Context, InitAttr, QpCap, QpInitAttr, RecvWr, RtrAttr, RtsAttr,
    SendWr,
};
use bareverbs::wqe::{EmitError, WqeParseError};
use bareverbs_sim::fw::{bring_up_on, FwConfig, SimUar, WiredError};
use bareverbs_sim::{Fabric, SimError};
use core::error::Error as StdError;
use core::fmt::{Debug, Display};
use static_assertions::assert_impl_all;

// Every layer's error types: codec, ring-level queues, command interface,
// device, verbs, self-test.
assert_impl_all!(ParseError: StdError, Debug, Display, Send, Sync, Copy);
assert_impl_all!(WqeParseError: StdError, Debug, Display, Send, Sync, Copy);
assert_impl_all!(EmitError: StdError, Debug, Display, Send, Sync, Copy);
assert_impl_all!(PostError: StdError, Debug, Display, Send, Sync, Copy);
assert_impl_all!(PostErrorKind: StdError, Debug, Display, Send, Sync, Copy);
assert_impl_all!(RecvError: StdError, Debug, Display, Send, Sync, Copy);
assert_impl_all!(RecvErrorKind: StdError, Debug, Display, Send, Sync, Copy);
assert_impl_all!(PollError: StdError, Debug, Display, Send, Sync, Copy);
assert_impl_all!(CqError: StdError, Debug, Display, Send, Sync, Copy);
assert_impl_all!(SizingError: StdError, Debug, Display, Send, Sync, Copy);
assert_impl_all!(QpTransitionError: StdError, Debug, Display, Send, Sync, Copy);
assert_impl_all!(CmdError: StdError, Debug, Display, Send, Sync, Copy);
assert_impl_all!(CmdqSetupError: StdError, Debug, Display, Send, Sync, Copy);
assert_impl_all!(InitSegError: StdError, Debug, Display, Send, Sync, Copy);
assert_impl_all!(PageError: StdError, Debug, Display, Send, Sync, Copy);
assert_impl_all!(DeviceError: StdError, Debug, Display, Send, Sync, Copy);
assert_impl_all!(verbs::Error: StdError, Debug, Display, Send, Sync, Copy);
assert_impl_all!(SelfTestError: StdError, Debug, Display, Send, Sync, Copy);
// The simulator's.
assert_impl_all!(SimError: StdError, Debug, Display, Send, Sync, Copy);
assert_impl_all!(WiredError: StdError, Debug, Display, Send, Sync, Copy);

// `?` into `verbs::Error` from every error a verbs call returns.
assert_impl_all!(verbs::Error: From<DeviceError>, From<SizingError>, From<CqError>);
assert_impl_all!(verbs::Error: From<CmdError>, From<PostError>, From<PostErrorKind>);
assert_impl_all!(verbs::Error: From<RecvError>, From<PollError>);
// The command layer's top error takes the others; the device's takes them all.
assert_impl_all!(CmdError: From<InitSegError>, From<CmdqSetupError>, From<PageError>);
assert_impl_all!(DeviceError: From<CmdError>, From<InitSegError>, From<CmdqSetupError>);
assert_impl_all!(DeviceError: From<PageError>, From<CqError>);

type Qp<'a> = verbs::QueuePair<'a, SimUar, 64, 16>;

/// The whole verbs flow with `?` on every fallible call, returning
/// `verbs::Error`: bring-up (`DeviceError`), creation and transitions,
/// `post_recv` (`RecvError`), `post_send` (`PostError`), a batch push
/// (`PostErrorKind`) and `poll` (`PollError`). Returns the completions.
fn flow() -> Result<[WorkCompletion; 3], verbs::Error> {
    let fabric = Fabric::new(1);
    let (dev, _nic) = bring_up_on(&fabric, FwConfig::default(), DeviceConfig::default())?;
    let ctx = Context::new(dev);
    let pd = ctx.alloc_pd()?;
    let buf = ctx.alloc_buffer(4096)?;
    let mr = ctx.reg_mr(&pd, &buf, Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
    let cq = ctx.create_cq(32)?;
    let attr = QpInitAttr::new(QpType::Rc, &cq, &cq, QpCap::new(16, 16, 1, 1));
    let mut qp: Qp = ctx.create_qp(&pd, &attr)?;
    qp.to_init(&InitAttr::new(1, Access::REMOTE_WRITE))?;
    qp.post_recv(&[RecvWr::new(2, &[mr.sge(1024, 64).expect("sge")])])?;
    let ah = AddressHandle::loopback(1);
    qp.to_rtr(&RtrAttr::new(IbMtu::Mtu1024, qp.qp_num(), 0, ah))?;
    qp.to_rts(&RtsAttr::new(0))?;
    buf.write(0, b"hello")?;
    let dst = mr.remote(2048, 5).expect("remote range");
    let op = SendOp::Write {
        remote_addr: dst.addr,
        rkey: dst.rkey,
    };
    let sge = [mr.sge(0, 5).expect("sge")];
    qp.post_send(&[SendWr::new(1, op, &sge).signaled()])?;
    let mut batch = qp.send_batch();
    batch.push(&SendWr::new(3, SendOp::Send, &sge).signaled())?;
    batch.ring();
    let mut wc = [WorkCompletion::default(); 3];
    let mut got = 0;
    for _ in 0..1000 {
        got += cq.poll(&mut qp, &mut wc[got..])?;
        if got == 3 {
            break;
        }
    }
    Ok(wc)
}

#[test]
fn question_mark_works_on_every_verbs_call() {
    let wc = flow().expect("the loopback flow");
    let mut ids: Vec<_> = wc.iter().map(|w| (w.wr_id, w.status)).collect();
    ids.sort_by_key(|&(id, _)| id);
    assert_eq!(
        ids,
        [
            (1, WcStatus::Success),
            (2, WcStatus::Success),
            (3, WcStatus::Success)
        ]
    );
}

/// The `source()` of `e`, downcast to `T`.
fn source_as<T: StdError + 'static>(e: &dyn StdError) -> Option<&T> {
    e.source()?.downcast_ref::<T>()
}

/// `outer` is a transparent wrapper of `inner`: the same message and the
/// same source (so a chain reporter prints the message once).
fn assert_transparent(outer: &dyn StdError, inner: &dyn StdError) {
    assert_eq!(outer.to_string(), inner.to_string());
    assert_eq!(
        outer.source().map(|s| s.to_string()),
        inner.source().map(|s| s.to_string()),
        "{outer:?} forwards source() to {inner:?}"
    );
}

#[test]
fn command_layer_errors_wrap_with_source() {
    let geometry = InitSegError::TooFewSlots { log_sz: 0 };
    let setup = CmdqSetupError::Geometry(geometry);
    assert_eq!(source_as::<InitSegError>(&setup), Some(&geometry));
    assert!(CmdqSetupError::OutOfDmaMemory.source().is_none());

    let cmd = CmdError::from(setup);
    assert_eq!(cmd, CmdError::CmdqSetup(setup));
    assert_eq!(source_as::<CmdqSetupError>(&cmd), Some(&setup));
    // Two levels down: the geometry problem.
    let inner = cmd.source().and_then(StdError::source);
    assert_eq!(inner.and_then(|e| e.downcast_ref()), Some(&geometry));

    let fatal = InitSegError::Fatal(HealthProblem::CounterStuck { counter: 7 });
    let cmd = CmdError::from(fatal);
    assert_eq!(source_as::<InitSegError>(&cmd), Some(&fatal));
    let cmd = CmdError::from(PageError::UnknownPage { iova: 0x1000 });
    assert_eq!(
        source_as::<PageError>(&cmd),
        Some(&PageError::UnknownPage { iova: 0x1000 })
    );
    let failed = CmdError::Failed {
        opcode: 0x500,
        status: CmdStatus::BadParam,
        syndrome: 1,
    };
    assert!(failed.source().is_none());
    // Every message is non-empty text.
    for e in [&setup as &dyn StdError, &cmd, &failed, &fatal] {
        assert!(!e.to_string().is_empty());
    }
}

#[test]
fn device_errors_wrap_the_command_layer_with_source() {
    let failed = CmdError::Timeout {
        opcode: 0x100,
        waited_us: 5,
    };
    let bring_up = DeviceError::BringUp {
        step: Step::EnableHca,
        err: failed,
    };
    assert_eq!(source_as::<CmdError>(&bring_up), Some(&failed));
    let cmd = DeviceError::from(failed);
    assert_eq!(cmd, DeviceError::Cmd(failed));
    // `Cmd` is transparent: the command error is the variant's payload,
    // its message and its (absent) source are the wrapper's.
    assert_transparent(&cmd, &failed);
    assert!(cmd.source().is_none());
    // The command interface's own failures keep one device-level form.
    let pages = PageError::TooManyChunks;
    assert_eq!(
        DeviceError::from(CmdError::Pages(pages)),
        DeviceError::Pages(pages)
    );
    assert_eq!(
        source_as::<PageError>(&DeviceError::Pages(pages)),
        Some(&pages)
    );
    let seg = InitSegError::CmdifRev { found: 4 };
    assert_eq!(DeviceError::from(CmdError::InitSeg(seg)), seg.into());
    assert_eq!(
        source_as::<InitSegError>(&DeviceError::InitSeg(seg)),
        Some(&seg)
    );
    let setup = CmdqSetupError::Misaligned { iova: 0x10 };
    assert_eq!(DeviceError::from(CmdError::CmdqSetup(setup)), setup.into());
    assert_eq!(
        source_as::<CmdqSetupError>(&DeviceError::Cmdq(setup)),
        Some(&setup)
    );
    let cq = CqError::BadCqeVersion { version: 2 };
    assert_eq!(source_as::<CqError>(&DeviceError::Cq(cq)), Some(&cq));
    assert!(DeviceError::NoUar { index: 1 }.source().is_none());
}

#[test]
fn verbs_errors_wrap_every_lower_layer_with_source() {
    let post = PostError {
        index: 1,
        kind: PostErrorKind::MissingUdDest,
    };
    let e = verbs::Error::from(post);
    assert_eq!(e, verbs::Error::Post(post));
    // The wrappers that add nothing are transparent: match the variant
    // for the lower error; message and source are the lower error's.
    assert_transparent(&e, &post);

    // `Push` adds context ("WR not pushed"): the kind is its source.
    let kind = PostErrorKind::AtomicsDisabled;
    assert_eq!(
        source_as::<PostErrorKind>(&verbs::Error::from(kind)),
        Some(&kind)
    );

    let recv = RecvError {
        index: 0,
        kind: RecvErrorKind::SgeOutOfBounds { sge: 0 },
    };
    assert_eq!(verbs::Error::from(recv), verbs::Error::Recv(recv));
    assert_transparent(&verbs::Error::from(recv), &recv);

    let poll = PollError::UnknownQp {
        qp: 5,
        completions: 0,
    };
    assert_eq!(verbs::Error::from(poll), verbs::Error::Poll(poll));
    assert_transparent(&verbs::Error::from(poll), &poll);

    let sizing = qp_layout(
        &QpCaps::new(QpType::Rc).send(65536, 16, 0),
        &DeviceCaps::DEFAULT,
    )
    .expect_err("65536 WRs of 16 SGEs exceed the device");
    assert_eq!(verbs::Error::from(sizing), verbs::Error::Sizing(sizing));
    assert_transparent(&verbs::Error::from(sizing), &sizing);

    // A command error arrives through the device layer: verbs → device → command.
    let cmd = CmdError::Failed {
        opcode: 0x500,
        status: CmdStatus::BadParam,
        syndrome: 0x1234,
    };
    let e = verbs::Error::from(cmd);
    assert_eq!(e, verbs::Error::Device(DeviceError::Cmd(cmd)));
    let verbs::Error::Device(device) = e else {
        panic!("{e:?} is a device error")
    };
    assert_eq!(device, DeviceError::Cmd(cmd));
    // Both wrappers are transparent: the chain is the command error alone.
    assert_transparent(&e, &device);
    assert_transparent(&device, &cmd);
    assert!(e.source().is_none());

    let storage = verbs::Error::Storage {
        queue: "send",
        need: 64,
        have: 32,
    };
    assert!(storage.source().is_none());
}

#[test]
fn selftest_and_simulator_errors_have_sources() {
    let post = PostError {
        index: 0,
        kind: PostErrorKind::AtomicsDisabled,
    };
    let e = SelfTestError::Post(bareverbs::selftest::Step::Write, post);
    assert_eq!(source_as::<PostError>(&e), Some(&post));

    let t = QpTransitionError::Illegal {
        from: QpState::Reset,
        to: QpState::Rts,
    };
    let sim = SimError::Transition(t);
    assert_eq!(source_as::<QpTransitionError>(&sim), Some(&t));
    assert!(SimError::BadSize.source().is_none());
    let wired = WiredError::Join(sim);
    assert_eq!(source_as::<SimError>(&wired), Some(&sim));
    let dev = DeviceError::NoUar { index: 9 };
    assert_eq!(
        source_as::<DeviceError>(&WiredError::BringUp(dev)),
        Some(&dev)
    );
}

/// The messages of `e`'s chain: `e`, its source, that one's source, ….
fn chain_of(e: &dyn StdError) -> Vec<String> {
    let mut out = vec![e.to_string()];
    let mut next = e.source();
    while let Some(s) = next {
        out.push(s.to_string());
        next = s.source();
    }
    out
}

/// Walks `e`'s `source()` chain: no message is empty or contains a later
/// one (nothing printed twice), and the chain joined with ": " — as
/// `Chain` prints it — is `want`.
fn assert_chain(e: &dyn StdError, want: &str) {
    let msgs = chain_of(e);
    for (i, m) in msgs.iter().enumerate() {
        assert!(!m.is_empty(), "{e:?}: empty message in {msgs:?}");
        for later in &msgs[i + 1..] {
            assert!(
                !m.contains(later.as_str()),
                "{e:?}: {m:?} repeats its source's {later:?}"
            );
        }
    }
    assert_eq!(msgs.join(": "), want, "{e:?}");
    assert_eq!(Chain::new(e).to_string(), want, "{e:?}");
}

/// Each message once (issue 28): transparent wrappers forward `Display`
/// and `source()`, context wrappers print only their context, so a chain
/// reporter prints every message once and the whole chain still reads as
/// the full message.
#[test]
fn every_message_appears_once_in_the_chain() {
    // verbs → device → command, transparent all the way: one message.
    let failed = CmdError::Failed {
        opcode: 0x500,
        status: CmdStatus::BadParam,
        syndrome: 0x1234,
    };
    let e = verbs::Error::from(failed);
    let failed_text = "command CREATE_QP (0x500) failed: status 0x03 BAD_PARAM_ERR \
                       syndrome 0x00001234";
    assert_chain(&e, failed_text);

    // verbs (transparent) → device BringUp (context) → command.
    let timeout = CmdError::Timeout {
        opcode: 0x104,
        waited_us: 5,
    };
    let bring_up = DeviceError::BringUp {
        step: Step::EnableHca,
        err: timeout,
    };
    let timeout_text =
        "command ENABLE_HCA (0x104) timed out after 5 us (firmware still owns the slot)";
    let want = format!("bring-up step EnableHca: {timeout_text}");
    assert_eq!(bring_up.to_string(), "bring-up step EnableHca");
    assert_chain(&bring_up, &want);
    assert_chain(&verbs::Error::Device(bring_up), &want);

    // verbs → device Cmd (transparent) → command InitSeg (context) →
    // initialization segment.
    let seg = InitSegError::CmdifRev { found: 4 };
    let e = verbs::Error::Device(DeviceError::Cmd(CmdError::InitSeg(seg)));
    let want = "initialization segment: command interface revision 4, expected 5";
    assert_chain(&e, want);
    // The same failure in its device-level form (what `From` makes).
    let e = verbs::Error::from(CmdError::InitSeg(seg));
    assert_eq!(e, verbs::Error::Device(DeviceError::InitSeg(seg)));
    assert_eq!(
        DeviceError::InitSeg(seg).to_string(),
        "initialization segment"
    );
    assert_chain(&e, want);

    // Four messages: verbs → device Cmdq → command queue Geometry → segment.
    let geometry = InitSegError::TooFewSlots { log_sz: 0 };
    let e = verbs::Error::from(CmdError::CmdqSetup(CmdqSetupError::Geometry(geometry)));
    assert_chain(
        &e,
        "command queue setup: unusable command queue geometry: \
         2^0 command slots, at least 2 are needed",
    );
    let e = CmdError::Pages(PageError::UnknownPage { iova: 0x1000 });
    assert_chain(&e, &format!("firmware pages: {}", e.source().unwrap()));
    let cq = CqError::BadCqeVersion { version: 2 };
    assert_chain(&DeviceError::Cq(cq), &format!("CQ: {cq}"));

    // A context wrapper of the verbs layer.
    let kind = PostErrorKind::MissingUdDest;
    assert_chain(
        &verbs::Error::from(kind),
        "WR not pushed: UD send without a destination",
    );

    // The self-test and the simulator wrap the same way.
    let st = SelfTestError::Device(bareverbs::selftest::Step::Setup, bring_up);
    assert_chain(
        &st,
        &format!("setup: bring-up step EnableHca: {timeout_text}"),
    );
    let wired = WiredError::BringUp(bring_up);
    assert_chain(
        &wired,
        &format!("simulated bring-up failed: bring-up step EnableHca: {timeout_text}"),
    );
    let t = QpTransitionError::Illegal {
        from: QpState::Reset,
        to: QpState::Rts,
    };
    assert_chain(
        &WiredError::Join(SimError::Transition(t)),
        &format!("joining the wire: Transition: {t}"),
    );
}
