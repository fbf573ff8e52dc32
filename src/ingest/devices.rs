//! Which unit a tracker is: its own id (`dispositivos`) or its unit's plate.
//!
//! Owns [`Devices`], the lookup the receiver runs on every request: first the tracker ids the
//! operator declared (`flota recibir --dispositivo IMEI=PLACA`, kept in `dispositivos`),
//! then the plate, normalised as the tools normalise what people type (`p 123-bcd` is
//! `P-123BCD`). A unit registered while receiving is added here as soon as it is committed.

use std::collections::HashMap;

use crate::fleet::text::plate_key;
use crate::store::Vehicle;

#[derive(Debug, Clone, Default)]
pub struct Devices {
    by_device: HashMap<String, i64>,
    by_plate: HashMap<String, i64>,
}

impl Devices {
    pub fn new(vehicles: &[Vehicle], devices: &[(String, i64)]) -> Devices {
        Devices {
            by_device: devices.iter().cloned().collect(),
            by_plate: vehicles
                .iter()
                .map(|v| (plate_key(&v.plate), v.id))
                .collect(),
        }
    }

    /// The vehicle id a tracker id stands for.
    pub fn find(&self, id: &str) -> Option<i64> {
        self.by_device
            .get(id.trim())
            .or_else(|| self.by_plate.get(&plate_key(id)))
            .copied()
    }

    /// A unit registered with `plate` as id `vehicle_id`.
    pub fn add(&mut self, plate: &str, vehicle_id: i64) {
        self.by_plate.insert(plate_key(plate), vehicle_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vehicle(id: i64, plate: &str) -> Vehicle {
        Vehicle {
            id,
            plate: plate.into(),
            kind: String::new(),
            driver: String::new(),
            active: true,
            limit_kmh: 80.0,
            routes: Vec::new(),
            zone: chrono_tz::UTC,
        }
    }

    #[test]
    fn declared_ids_first_then_plates_as_people_type_them() {
        let devices = Devices::new(
            &[vehicle(1, "P-123BCD"), vehicle(2, "C-456DEF")],
            &[("356938035643809".into(), 2), ("P123BCD".into(), 2)],
        );
        let check =
            |id: &str, expected: Option<i64>| assert_eq!(devices.find(id), expected, "{id}");
        check("P-123BCD", Some(1));
        check("p 123 bcd", Some(1));
        check(" 356938035643809 ", Some(2));
        // A declared id wins over the plate it happens to spell.
        check("P123BCD", Some(2));
        check("P-999ZZZ", None);
        check("", None);
    }
}
