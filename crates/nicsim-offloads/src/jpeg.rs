//! JPEG offload: mostly a timing stage, but when the covered region `[4..len-8)` of the
//! L4 payload starts with a JPEG SOI marker it really decodes it (`BadJpeg` on error).

use jpeg_decoder::Decoder;
use jpeg_encoder::{ColorType, Encoder};

use crate::{l4_payload, DropReason, FuncMeta, FunctionalOffload, OffloadKind, SEQ_LEN, TAG_LEN};

/// Decoder output cap: a payload-sized JPEG cannot legitimately need more, and a
/// hostile header claiming 65535x65535 pixels must not allocate gigabytes.
const MAX_DECODED_BYTES: usize = 1 << 20;

pub(crate) struct Jpeg;

impl FunctionalOffload for Jpeg {
    fn kind(&self) -> OffloadKind {
        OffloadKind::Jpeg
    }

    fn process(&self, frame: &mut Vec<u8>, _meta: &mut FuncMeta) -> Result<(), DropReason> {
        let Some((_, range)) = l4_payload(frame) else {
            return Ok(());
        };
        if range.len() < SEQ_LEN + TAG_LEN {
            return Ok(());
        }
        let region = &frame[range.start + SEQ_LEN..range.end - TAG_LEN];
        if !region.starts_with(&[0xFF, 0xD8]) {
            return Ok(());
        }
        let mut decoder = Decoder::new(region);
        decoder.set_max_decoding_buffer_size(MAX_DECODED_BYTES);
        decoder.decode().map(drop).map_err(|_| DropReason::BadJpeg)
    }

    fn prepare(&self, _frame: &mut Vec<u8>) {}
}

/// A small deterministic grayscale JPEG (quality 75, optimized Huffman tables) whose
/// pixels are a gradient plus seed-dependent noise, for generators that embed images.
///
/// # Panics
/// If `width` or `height` is 0.
pub fn tiny_jpeg(width: u16, height: u16, seed: u64) -> Vec<u8> {
    let mut state = seed;
    let pixels: Vec<u8> = (0..usize::from(width) * usize::from(height))
        .map(|i| {
            // SplitMix64 step: cheap, deterministic noise (not used for anything secret).
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            let noise = (z ^ (z >> 31)) as u8 >> 3;
            (i as u8).wrapping_mul(7).wrapping_add(noise)
        })
        .collect();
    let mut out = Vec::new();
    let mut encoder = Encoder::new(&mut out, 75);
    encoder.set_optimized_huffman_tables(true);
    encoder
        .encode(&pixels, width, height, ColorType::Luma)
        .expect("encoding a well-formed grayscale buffer into a Vec cannot fail");
    out
}
