//! PCI addresses (`domain:bus:device.function`).

use crate::error::VfioHostError;
use std::fmt;
use std::str::FromStr;

/// A PCI function address such as `0000:3b:00.0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bdf {
    /// PCI domain (segment), 16 bits.
    pub domain: u16,
    /// Bus number.
    pub bus: u8,
    /// Device number (0–31).
    pub device: u8,
    /// Function number (0–7).
    pub function: u8,
}

impl fmt::Display for Bdf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

fn hex(s: &str, max_digits: usize, what: &'static str, full: &str) -> Result<u32, VfioHostError> {
    if s.is_empty() || s.len() > max_digits || !s.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(VfioHostError::BadAddress {
            input: full.to_string(),
            problem: what,
        });
    }
    u32::from_str_radix(s, 16).map_err(|_| VfioHostError::BadAddress {
        input: full.to_string(),
        problem: what,
    })
}

impl FromStr for Bdf {
    type Err = VfioHostError;
    /// Parses `DDDD:BB:DD.F` or `BB:DD.F` (domain 0), hexadecimal, as
    /// `lspci -D` prints them.
    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let s = input.trim();
        let bad = |problem| VfioHostError::BadAddress {
            input: input.to_string(),
            problem,
        };
        let (rest, func) = s.rsplit_once('.').ok_or(bad("missing '.function'"))?;
        let parts: Vec<&str> = rest.split(':').collect();
        let (dom, bus, dev) = match parts.as_slice() {
            [d, b, v] => (*d, *b, *v),
            [b, v] => ("0", *b, *v),
            _ => return Err(bad("expected domain:bus:device.function")),
        };
        let domain = hex(dom, 4, "domain is not 1-4 hex digits", input)?;
        let bus = hex(bus, 2, "bus is not 1-2 hex digits", input)?;
        let device = hex(dev, 2, "device is not 1-2 hex digits", input)?;
        let function = hex(func, 1, "function is not one hex digit", input)?;
        if device > 0x1f {
            return Err(bad("device number above 0x1f"));
        }
        if function > 7 {
            return Err(bad("function number above 7"));
        }
        Ok(Bdf {
            domain: domain as u16,
            bus: bus as u8,
            device: device as u8,
            function: function as u8,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lspci_forms() {
        let b: Bdf = "0000:3b:00.0".parse().unwrap();
        assert_eq!(
            b,
            Bdf {
                domain: 0,
                bus: 0x3b,
                device: 0,
                function: 0
            }
        );
        assert_eq!(b.to_string(), "0000:3b:00.0");
        let b: Bdf = "af:1f.7".parse().unwrap();
        assert_eq!((b.domain, b.bus, b.device, b.function), (0, 0xaf, 0x1f, 7));
        assert_eq!(b.to_string(), "0000:af:1f.7");
        let b: Bdf = "ffff:00:01.1".parse().unwrap();
        assert_eq!(b.domain, 0xffff);
        assert!("10000:00:01.1".parse::<Bdf>().is_err());
    }

    #[test]
    fn rejects_bad_addresses() {
        for s in [
            "",
            "3b:00",
            "0000:3b:00.8",
            "0000:3b:20.0",
            "0000:3b:00.x",
            "00000:3b:00.0",
            "0000:3bb:00.0",
            "0000:3b:00:00.0",
            "0000::00.0",
            "g000:3b:00.0",
        ] {
            let e = s.parse::<Bdf>().unwrap_err();
            assert!(matches!(e, VfioHostError::BadAddress { .. }), "{s}: {e}");
            assert!(e.to_string().contains("PCI address"), "{e}");
        }
    }
}
