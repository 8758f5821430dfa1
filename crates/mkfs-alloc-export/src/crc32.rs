//! A running CRC-32 (IEEE 802.3, the one zlib and libsparse use) that can
//! take long runs of zeros without reading them: a DONT_CARE gap of
//! gigabytes counts as zeros in the CRC32 chunk.
//!
//! Feeding the register a zero bit multiplies it by x modulo the CRC
//! polynomial, so `n` zero bytes multiply it by x^(8n) mod P, which square
//! and multiply finds in 64 steps whatever `n` is.

use crc::{Crc, CRC_32_ISO_HDLC};

const CRC32: Crc<u32> = Crc::<u32>::new(&CRC_32_ISO_HDLC);
/// The generator polynomial, bit-reversed (bit 31 is x^0).
const POLY: u32 = 0xEDB8_8320;
/// The polynomial 1 (x^0) in that representation.
const ONE: u32 = 1 << 31;

/// A CRC-32 over data fed in pieces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Crc32 {
    /// The CRC of everything so far (the finished value).
    value: u32,
}

impl Crc32 {
    pub(crate) fn update(&mut self, data: &[u8]) {
        // Resume from the finished value: the register is its complement,
        // given to the crc crate bit-reversed (it reflects the initial value).
        let mut d = CRC32.digest_with_initial((!self.value).reverse_bits());
        d.update(data);
        self.value = d.finalize();
    }

    /// As `update` with `n` zero bytes.
    pub(crate) fn zeros(&mut self, n: u64) {
        let register = !self.value;
        self.value = !mul(register, x_pow_8n(n));
    }

    pub(crate) fn value(&self) -> u32 {
        self.value
    }
}

/// `b · x mod P`.
fn times_x(b: u32) -> u32 {
    if b & 1 != 0 {
        (b >> 1) ^ POLY
    } else {
        b >> 1
    }
}

/// `a · b mod P`.
fn mul(a: u32, mut b: u32) -> u32 {
    let mut product = 0;
    for i in 0..32 {
        if a & (ONE >> i) != 0 {
            product ^= b;
        }
        b = times_x(b);
    }
    product
}

/// `x^(8n) mod P`.
fn x_pow_8n(mut n: u64) -> u32 {
    let mut result = ONE;
    let mut base = ONE >> 8; // x^8
    while n > 0 {
        if n & 1 != 0 {
            result = mul(result, base);
        }
        base = mul(base, base);
        n >>= 1;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_match_one_pass() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 31 % 253) as u8).collect();
        let mut c = Crc32::default();
        for piece in data.chunks(777) {
            c.update(piece);
        }
        assert_eq!(c.value(), CRC32.checksum(&data));
        // The check value of the CRC-32 catalogue.
        let mut c = Crc32::default();
        c.update(b"123456789");
        assert_eq!(c.value(), 0xCBF4_3926);
    }

    #[test]
    fn zeros_without_reading_them() {
        for (head, n) in [
            (0usize, 0u64),
            (0, 1),
            (5, 3),
            (100, 4096),
            (1, 1 << 20),
            (7, 12_345),
        ] {
            let mut data: Vec<u8> = (0..head).map(|i| i as u8 ^ 0x5C).collect();
            let mut c = Crc32::default();
            c.update(&data);
            c.zeros(n);
            c.update(b"tail");
            data.resize(head + n as usize, 0);
            data.extend_from_slice(b"tail");
            assert_eq!(c.value(), CRC32.checksum(&data), "{head} then {n} zeros");
        }
    }
}
