//! Ethernet frame check sequence: the IEEE 802.3 CRC-32, stored little-endian after the frame.
//!
//! All functions accept any input without panicking.

/// Length of the FCS in bytes.
pub const FCS_LEN: usize = 4;

/// The CRC-32 of `data` (a frame without FCS).
pub fn fcs(data: &[u8]) -> u32 {
    crc32fast::hash(data)
}

/// Appends the FCS of `frame` to it, in wire order.
pub fn append_fcs(frame: &mut Vec<u8>) {
    let crc = fcs(frame);
    frame.extend_from_slice(&crc.to_le_bytes());
}

/// Whether the last four bytes of `frame_with_fcs` are the FCS of the bytes before them.
pub fn check_fcs(frame_with_fcs: &[u8]) -> bool {
    match frame_with_fcs
        .len()
        .checked_sub(FCS_LEN)
        .map(|n| frame_with_fcs.split_at(n))
    {
        Some((frame, trailer)) => trailer == fcs(frame).to_le_bytes(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_check_value_and_round_trip() {
        assert_eq!(fcs(b"123456789"), 0xcbf4_3926); // the standard CRC-32 check value
        let mut frame = vec![0xab; 60];
        append_fcs(&mut frame);
        assert!(check_fcs(&frame));
        frame[3] ^= 1;
        assert!(!check_fcs(&frame));
        assert!(!check_fcs(&[1, 2, 3]));
    }
}
