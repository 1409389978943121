//! Fault injection into the firmware model's next commands ([`Faults`]).

/// Faults to inject into the next commands.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// The next N commands are never completed (ownership stays with firmware).
    pub hang_next: u32,
    /// The next command fails with (status, syndrome) regardless of input.
    pub fail_next: Option<(u8, u32)>,
    /// The next command gets this delivery status.
    pub delivery_next: Option<u8>,
    /// The next output mailbox chain gets a wrong block number.
    pub corrupt_out_block_num: bool,
    /// The health counter stops ticking.
    pub health_stuck: bool,
    /// A lying firmware: the next successful ALLOC_PD, ALLOC_UAR, CREATE_MKEY,
    /// CREATE_CQ, CREATE_QP or CREATE_SRQ reports this whole word as the
    /// object number (output dw2, reserved bits 31:24 included) instead of
    /// the number the model assigned; the model keeps its real object.
    pub object_number_next: Option<u32>,
    /// An event storm: every EQ doorbell (consumer-index update) refills
    /// the EQ with fresh valid EQEs (PORT_CHANGE), so the ring never runs
    /// dry. Start it with [`SimFirmware::post_event`](super::SimFirmware::post_event).
    pub eqe_storm: bool,
}
