//! From a parsed scenario file to a checked [`World`]: every semantic rule, one message each.
//!
//! Owns the meaning checks that the TOML syntax cannot express: names that must exist, ranges
//! that must be ordered, geometry that must not be degenerate, the period `--ahora` ends, and
//! the [`Checker`] that words every message. The injections (which must fall on a working day,
//! fit in a shift, and not collide) are checked in `injections.rs`. The first problem found is
//! returned; nothing is simulated or written when any exists.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use chrono::{Duration, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Timelike};
use chrono_tz::Tz;

use super::file::{
    BehaviourFile, General, GeofenceFile, NoiseFile, ScenarioFile, ShiftFile, ShiftOverride,
    UnitFile, VehicleTypeFile,
};
use super::injections::{Frame, injections, random_injections};
use super::{Ahora, Dynamics, ScenarioError, ShiftRule, Unit, World, plate_key};
use crate::calendar::{WEEKDAY_KEYS, weekday_named};
use crate::geometry::earth::{LatLon, distance_m};
use crate::geometry::geofence::{Geofence, Shape, ring_area_deg2};
use crate::geometry::route::Route;

/// Routes of one unit must start within this distance of each other.
const SAME_DEPOT_M: f64 = 300.0;

/// Builds the messages: every one names the scenario file.
pub(super) struct Checker<'a> {
    path: &'a Path,
}

impl Checker<'_> {
    pub(super) fn fail<T>(&self, message: impl Into<String>) -> Result<T, ScenarioError> {
        Err(ScenarioError::Invalid {
            path: self.path.to_path_buf(),
            message: message.into(),
        })
    }

    pub(super) fn range(
        &self,
        what: &str,
        range: [f64; 2],
        min: f64,
        max: f64,
    ) -> Result<(), ScenarioError> {
        let [a, b] = range;
        if !(a.is_finite() && b.is_finite()) || a > b {
            return self.fail(format!(
                "{what}: el rango [{a}, {b}] debe ir de menor a mayor"
            ));
        }
        if a < min || b > max {
            return self.fail(format!(
                "{what}: [{a}, {b}] fuera de los límites [{min}, {max}]"
            ));
        }
        Ok(())
    }

    pub(super) fn value(
        &self,
        what: &str,
        value: f64,
        min: f64,
        max: f64,
    ) -> Result<(), ScenarioError> {
        if !value.is_finite() || value < min || value > max {
            return self.fail(format!(
                "{what} = {value} fuera de los límites [{min}, {max}]"
            ));
        }
        Ok(())
    }

    pub(super) fn latlon(&self, what: &str, pair: [f64; 2]) -> Result<LatLon, ScenarioError> {
        let [lat, lon] = pair;
        if !(-90.0..=90.0).contains(&lat) || !(-180.0..=180.0).contains(&lon) {
            return self.fail(format!(
                "{what}: [{lat}, {lon}] no es una coordenada [lat, lon] válida"
            ));
        }
        Ok(LatLon::new(lat, lon))
    }

    pub(super) fn clock(&self, what: &str, text: &str) -> Result<u32, ScenarioError> {
        let parsed = NaiveTime::parse_from_str(text, "%H:%M:%S")
            .or_else(|_| NaiveTime::parse_from_str(text, "%H:%M"));
        match parsed {
            Ok(time) => Ok(time.num_seconds_from_midnight()),
            Err(_) => self.fail(format!("{what}: '{text}' no es una hora HH:MM")),
        }
    }
}

pub fn resolve(
    file: ScenarioFile,
    routes: BTreeMap<String, Route>,
    ahora: Ahora,
    path: &Path,
    hash: String,
) -> Result<World, ScenarioError> {
    let check = Checker { path };
    let general = &file.escenario;
    if general.nombre.trim().is_empty() {
        return check.fail("[escenario] nombre no puede estar vacío");
    }
    let zone: Tz = match general.zona_horaria.parse() {
        Ok(zone) => zone,
        Err(_) => {
            return check.fail(format!(
                "[escenario] zona_horaria '{}' no es una zona IANA (p. ej. America/Guatemala)",
                general.zona_horaria
            ));
        }
    };
    check.value(
        "[escenario] intervalo_reporte_s",
        general.intervalo_reporte_s.into(),
        1.0,
        3600.0,
    )?;
    let (ahora_local, ahora_utc) = ahora_in_zone(&check, zone, ahora)?;
    let days = period(&check, general, ahora_local.date())?;

    let default_workdays = weekdays(
        &check,
        "[calendario] dias_laborables",
        &file.calendario.dias_laborables,
    )?;
    let shift_rules = shift_rules(&check, &file.turno)?;
    let types = vehicle_types(&check, &file.tipos)?;
    check.value(
        "[limites] velocidad_kmh",
        file.limites.velocidad_kmh,
        1.0,
        300.0,
    )?;
    behaviour(&check, &file.comportamiento)?;
    let noise = noise(&check, file.ruido.clone())?;
    let fences = geofences(&check, &file.geocercas)?;

    let route_list: Vec<Route> = routes.into_values().collect();
    let route_index: HashMap<&str, usize> = route_list
        .iter()
        .enumerate()
        .map(|(i, r)| (r.name.as_str(), i))
        .collect();
    let units = units(
        &check,
        &unit_files(&check, &file)?,
        &route_list,
        &route_index,
        &types,
        file.limites.velocidad_kmh,
        default_workdays,
        shift_rules,
    )?;

    let world_so_far = Frame {
        days: &days,
        holidays: &file.calendario.feriados,
        ahora_local,
        units: &units,
        routes: &route_list,
    };
    let injections = injections(&check, &file.inyecciones, &world_so_far)?;
    random_injections(&check, &file.inyecciones, &world_so_far, &injections)?;

    Ok(World {
        name: general.nombre.clone(),
        description: general.descripcion.clone(),
        zone,
        seed: general.semilla,
        interval_s: general.intervalo_reporte_s.into(),
        ahora_utc,
        ahora_local,
        days,
        holidays: file.calendario.feriados.clone(),
        routes: route_list,
        fences,
        fleet_limit_kmh: file.limites.velocidad_kmh,
        units,
        behaviour: file.comportamiento.clone(),
        noise,
        injections,
        random: file.inyecciones.aleatorias.clone(),
        detection: file.deteccion.clone(),
        hash,
    })
}

/// `--ahora` on the zone's clock (the wall clock is cut to the minute) and in UTC.
fn ahora_in_zone(
    check: &Checker,
    zone: Tz,
    ahora: Ahora,
) -> Result<(NaiveDateTime, i64), ScenarioError> {
    let ahora_local = match ahora {
        Ahora::Local(local) => local,
        Ahora::NowUtc(secs) => {
            let now = zone
                .timestamp_opt(secs - secs.rem_euclid(60), 0)
                .single()
                .map(|t| t.naive_local());
            match now {
                Some(now) => now,
                None => return check.fail("el reloj del sistema da una hora inválida"),
            }
        }
    };
    match zone.from_local_datetime(&ahora_local).earliest() {
        Some(t) => Ok((ahora_local, t.timestamp())),
        None => check.fail(format!(
            "--ahora {ahora_local} no existe en {zone} (cambio de horario)"
        )),
    }
}

/// The simulated dates, ending with the day of `--ahora` (`last_day`).
fn period(
    check: &Checker,
    general: &General,
    last_day: NaiveDate,
) -> Result<Vec<NaiveDate>, ScenarioError> {
    let first_day = match (general.dias, general.desde) {
        (Some(_), Some(_)) => return check.fail("[escenario] use 'dias' o 'desde', no ambos"),
        (None, None) => return check.fail("[escenario] falta 'dias' (o 'desde')"),
        (Some(days), None) => {
            check.value("[escenario] dias", days.into(), 1.0, 3660.0)?;
            last_day - Duration::days(i64::from(days) - 1)
        }
        (None, Some(from)) => {
            if from > last_day {
                return check.fail(format!(
                    "[escenario] desde = {from} es posterior al día de --ahora ({last_day})"
                ));
            }
            from
        }
    };
    Ok(first_day
        .iter_days()
        .take_while(|d| *d <= last_day)
        .collect())
}

/// `[[unidades]]` followed by every `[[flotillas]]` group expanded.
fn unit_files(check: &Checker, file: &ScenarioFile) -> Result<Vec<UnitFile>, ScenarioError> {
    let mut unit_files = file.unidades.clone();
    for (index, group) in file.flotillas.iter().enumerate() {
        if group.cantidad == 0 || group.cantidad > 100_000 {
            return check.fail(format!(
                "[[flotillas]] #{}: cantidad = {} fuera de los límites [1, 100000]",
                index + 1,
                group.cantidad
            ));
        }
        unit_files.extend(group.expand());
    }
    Ok(unit_files)
}

fn weekdays(check: &Checker, what: &str, names: &[String]) -> Result<[bool; 7], ScenarioError> {
    let mut days = [false; 7];
    for name in names {
        let lower = name.trim().to_lowercase();
        match weekday_named(&lower) {
            Some(weekday) => days[weekday.num_days_from_monday() as usize] = true,
            None => {
                return check.fail(format!(
                    "{what}: '{name}' no es un día ({})",
                    WEEKDAY_KEYS.join(", ")
                ));
            }
        }
    }
    Ok(days)
}

fn shift_rule(
    check: &Checker,
    what: &str,
    base: ShiftRule,
    over: Option<&ShiftOverride>,
) -> Result<ShiftRule, ScenarioError> {
    let Some(over) = over else {
        return Ok(base);
    };
    let mut rule = base;
    if let Some([a, b]) = &over.inicio {
        rule.start_min = [check.clock(what, a)? / 60, check.clock(what, b)? / 60];
    }
    if let Some(length) = over.duracion_h {
        rule.length_h = length;
    }
    validate_shift(check, what, rule)?;
    Ok(rule)
}

fn validate_shift(check: &Checker, what: &str, rule: ShiftRule) -> Result<(), ScenarioError> {
    if rule.start_min[0] > rule.start_min[1] {
        return check.fail(format!(
            "{what} inicio: la primera hora debe ser la más temprana"
        ));
    }
    check.range(&format!("{what} duracion_h"), rule.length_h, 0.5, 20.0)?;
    let latest_end = rule.start_min[1] as f64 / 60.0 + rule.length_h[1];
    if latest_end > 24.0 {
        return check.fail(format!("{what}: un turno no puede pasar de la medianoche"));
    }
    Ok(())
}

fn shift_rules(check: &Checker, shift: &ShiftFile) -> Result<[ShiftRule; 7], ScenarioError> {
    let base = ShiftRule {
        start_min: [
            check.clock("[turno] inicio", &shift.inicio[0])? / 60,
            check.clock("[turno] inicio", &shift.inicio[1])? / 60,
        ],
        length_h: shift.duracion_h,
    };
    validate_shift(check, "[turno]", base)?;
    let overrides = [
        &shift.lunes,
        &shift.martes,
        &shift.miercoles,
        &shift.jueves,
        &shift.viernes,
        &shift.sabado,
        &shift.domingo,
    ];
    let mut rules = [base; 7];
    for (i, over) in overrides.iter().enumerate() {
        let what = format!("[turno.{}]", WEEKDAY_KEYS[i]);
        rules[i] = shift_rule(check, &what, base, over.as_ref())?;
    }
    Ok(rules)
}

/// Built-in dynamics (SUMO's defaults, rounded) for types a scenario does not define: name,
/// acceleration and braking (m/s²), top speed (km/h).
const BUILTIN_TYPES: [(&str, f64, f64, f64); 6] = [
    ("camion", 1.3, 4.0, 90.0),
    ("panel", 2.0, 4.5, 110.0),
    ("pickup", 2.3, 4.5, 120.0),
    ("microbus", 1.8, 4.0, 100.0),
    ("automovil", 2.6, 4.5, 140.0),
    ("motocicleta", 3.0, 5.0, 120.0),
];

fn builtin_type(name: &str) -> Option<VehicleTypeFile> {
    let (_, accel, brake, top) = BUILTIN_TYPES.into_iter().find(|t| t.0 == name)?;
    Some(VehicleTypeFile {
        aceleracion_ms2: accel,
        frenado_ms2: brake,
        velocidad_max_kmh: top,
        limite_kmh: None,
    })
}

fn vehicle_types(
    check: &Checker,
    types: &BTreeMap<String, VehicleTypeFile>,
) -> Result<BTreeMap<String, VehicleTypeFile>, ScenarioError> {
    for (name, t) in types {
        let what = format!("[tipos.{name}]");
        check.value(
            &format!("{what} aceleracion_ms2"),
            t.aceleracion_ms2,
            0.1,
            10.0,
        )?;
        check.value(&format!("{what} frenado_ms2"), t.frenado_ms2, 0.1, 10.0)?;
        check.value(
            &format!("{what} velocidad_max_kmh"),
            t.velocidad_max_kmh,
            10.0,
            300.0,
        )?;
        if let Some(limit) = t.limite_kmh {
            check.value(&format!("{what} limite_kmh"), limit, 1.0, 300.0)?;
        }
    }
    Ok(types.clone())
}

fn behaviour(check: &Checker, b: &BehaviourFile) -> Result<(), ScenarioError> {
    let w = "[comportamiento]";
    check.range(
        &format!("{w} espera_inicial_min"),
        b.espera_inicial_min,
        0.0,
        600.0,
    )?;
    check.range(
        &format!("{w} espera_parada_min"),
        b.espera_parada_min,
        0.0,
        600.0,
    )?;
    check.range(
        &format!("{w} espera_deposito_min"),
        b.espera_deposito_min,
        0.0,
        600.0,
    )?;
    check.range(
        &format!("{w} espera_final_min"),
        b.espera_final_min,
        0.0,
        600.0,
    )?;
    check.range(
        &format!("{w} variacion_velocidad"),
        b.variacion_velocidad,
        0.1,
        3.0,
    )?;
    check.value(
        &format!("{w} cumplimiento_limite"),
        b.cumplimiento_limite,
        0.3,
        1.0,
    )?;
    check.range(
        &format!("{w} cambio_velocidad_s"),
        b.cambio_velocidad_s,
        1.0,
        3600.0,
    )?;
    check.value(
        &format!("{w} semaforos_por_km"),
        b.semaforos_por_km,
        0.0,
        20.0,
    )?;
    check.range(&format!("{w} semaforo_s"), b.semaforo_s, 1.0, 600.0)?;
    check.value(
        &format!("{w} reportes_apagado_min"),
        b.reportes_apagado_min,
        0.0,
        120.0,
    )?;
    check.value(&format!("{w} margen_vuelta"), b.margen_vuelta, 1.0, 5.0)?;
    Ok(())
}

fn noise(check: &Checker, mut n: NoiseFile) -> Result<NoiseFile, ScenarioError> {
    let w = "[ruido]";
    check.value(&format!("{w} sigma_m"), n.sigma_m, 0.0, 500.0)?;
    check.value(&format!("{w} deriva_sigma_m"), n.deriva_sigma_m, 0.0, 500.0)?;
    check.value(&format!("{w} deriva_tau_s"), n.deriva_tau_s, 1.0, 86_400.0)?;
    check.value(
        &format!("{w} saltos_probabilidad"),
        n.saltos_probabilidad,
        0.0,
        1.0,
    )?;
    check.value(&format!("{w} saltos_m"), n.saltos_m, 0.0, 10_000.0)?;
    check.value(
        &format!("{w} velocidad_sigma_kmh"),
        n.velocidad_sigma_kmh,
        0.0,
        50.0,
    )?;
    check.value(
        &format!("{w} umbral_estatico_kmh"),
        n.umbral_estatico_kmh,
        0.0,
        30.0,
    )?;
    check.value(
        &format!("{w} rumbo_sigma_grados"),
        n.rumbo_sigma_grados,
        0.0,
        180.0,
    )?;
    check.value(
        &format!("{w} duplicados_probabilidad"),
        n.duplicados_probabilidad,
        0.0,
        1.0,
    )?;
    check.value(
        &format!("{w} retrasados_probabilidad"),
        n.retrasados_probabilidad,
        0.0,
        1.0,
    )?;
    check.range(&format!("{w} retraso_s"), n.retraso_s, 0.0, 86_400.0)?;
    let jitter = n.jitter_estacionado_m.unwrap_or(n.sigma_m);
    check.value(&format!("{w} jitter_estacionado_m"), jitter, 0.0, 500.0)?;
    n.jitter_estacionado_m = Some(jitter);
    Ok(n)
}

fn geofences(check: &Checker, files: &[GeofenceFile]) -> Result<Vec<Geofence>, ScenarioError> {
    let mut seen = HashSet::new();
    let mut fences = Vec::new();
    for f in files {
        let what = format!("geocerca '{}'", f.nombre);
        if f.nombre.trim().is_empty() {
            return check.fail("[[geocercas]] nombre no puede estar vacío");
        }
        if !seen.insert(f.nombre.trim().to_lowercase()) {
            return check.fail(format!("{what} está repetida"));
        }
        let shapes = [
            f.cuadrado.is_some(),
            f.circulo.is_some(),
            f.poligono.is_some(),
        ];
        if shapes.iter().filter(|s| **s).count() != 1 {
            return check.fail(format!(
                "{what}: defina exactamente una forma: cuadrado, circulo o poligono"
            ));
        }
        let shape = if let Some(square) = &f.cuadrado {
            check.value(
                &format!("{what} medio_lado_m"),
                square.medio_lado_m,
                1.0,
                100_000.0,
            )?;
            Shape::Square {
                centre: check.latlon(&format!("{what} centro"), square.centro)?,
                half_side_m: square.medio_lado_m,
            }
        } else if let Some(circle) = &f.circulo {
            check.value(&format!("{what} radio_m"), circle.radio_m, 1.0, 100_000.0)?;
            Shape::Circle {
                centre: check.latlon(&format!("{what} centro"), circle.centro)?,
                radius_m: circle.radio_m,
            }
        } else {
            let pairs = f.poligono.as_deref().unwrap_or_default();
            let vertices = pairs
                .iter()
                .map(|p| check.latlon(&format!("{what} poligono"), *p))
                .collect::<Result<Vec<_>, _>>()?;
            let distinct: HashSet<String> = vertices
                .iter()
                .map(|v| format!("{:.7},{:.7}", v.lat, v.lon))
                .collect();
            if distinct.len() < 3 || ring_area_deg2(&vertices) < 1e-12 {
                return check.fail(format!(
                    "{what}: el polígono es degenerado (necesita al menos 3 vértices distintos que encierren un área)"
                ));
            }
            Shape::Polygon { vertices }
        };
        if let Some(limit) = f.limite_kmh {
            check.value(&format!("{what} limite_kmh"), limit, 1.0, 300.0)?;
        }
        fences.push(Geofence::new(
            f.nombre.trim().to_owned(),
            f.tipo.clone(),
            shape,
            f.limite_kmh,
        ));
    }
    Ok(fences)
}

#[allow(clippy::too_many_arguments)]
fn units(
    check: &Checker,
    files: &[UnitFile],
    routes: &[Route],
    route_index: &HashMap<&str, usize>,
    types: &BTreeMap<String, VehicleTypeFile>,
    fleet_limit_kmh: f64,
    default_workdays: [bool; 7],
    shift_rules: [ShiftRule; 7],
) -> Result<Vec<Unit>, ScenarioError> {
    if files.is_empty() {
        return check.fail("el escenario no tiene [[unidades]]");
    }
    let mut seen = HashSet::new();
    let mut units = Vec::new();
    for u in files {
        let what = format!("unidad '{}'", u.placa);
        let key = plate_key(&u.placa);
        if key.is_empty() {
            return check.fail("[[unidades]] placa no puede estar vacía");
        }
        if !seen.insert(key) {
            return check.fail(format!("{what}: placa repetida"));
        }
        let kind = unit_type(check, &what, &u.tipo, types)?;
        let unit_routes = unit_routes(check, &what, u, routes, route_index)?;
        let workdays = match &u.dias_laborables {
            Some(names) => weekdays(check, &format!("{what} dias_laborables"), names)?,
            None => default_workdays,
        };
        let mut shifts = shift_rules;
        if let Some(over) = &u.turno {
            for rule in &mut shifts {
                *rule = shift_rule(check, &format!("{what} turno"), *rule, Some(over))?;
            }
        }
        if let Some(km) = u.odometro_inicial_km {
            check.value(
                &format!("{what} odometro_inicial_km"),
                km,
                0.0,
                10_000_000.0,
            )?;
        }
        units.push(Unit {
            plate: u.placa.trim().to_owned(),
            kind: u.tipo.clone(),
            driver: u.conductor.clone(),
            routes: unit_routes,
            active: u.activo,
            workdays,
            shifts,
            dynamics: Dynamics {
                accel_ms2: kind.aceleracion_ms2,
                brake_ms2: kind.frenado_ms2,
                top_speed_kmh: kind.velocidad_max_kmh,
            },
            limit_kmh: kind.limite_kmh.unwrap_or(fleet_limit_kmh),
            odometer_start_km: u.odometro_inicial_km,
        });
    }
    Ok(units)
}

/// The unit's vehicle type: the scenario's `[tipos.*]`, else a built-in one.
fn unit_type(
    check: &Checker,
    what: &str,
    name: &str,
    types: &BTreeMap<String, VehicleTypeFile>,
) -> Result<VehicleTypeFile, ScenarioError> {
    if let Some(kind) = types.get(name).cloned().or_else(|| builtin_type(name)) {
        return Ok(kind);
    }
    let mut known: Vec<&str> = types.keys().map(String::as_str).collect();
    known.extend(BUILTIN_TYPES.iter().map(|t| t.0));
    known.sort_unstable();
    known.dedup();
    check.fail(format!(
        "{what}: tipo desconocido '{name}'; defina [tipos.{name}] o use uno de: {}",
        known.join(", ")
    ))
}

/// The unit's routes by index: all known, at least one if active, all from one depot.
fn unit_routes(
    check: &Checker,
    what: &str,
    u: &UnitFile,
    routes: &[Route],
    route_index: &HashMap<&str, usize>,
) -> Result<Vec<usize>, ScenarioError> {
    let mut unit_routes = Vec::new();
    for name in &u.rutas {
        match route_index.get(name.as_str()) {
            Some(index) => unit_routes.push(*index),
            None => {
                let known: Vec<&str> = routes.iter().map(|r| r.name.as_str()).collect();
                return check.fail(format!(
                    "{what}: ruta desconocida '{name}'; las disponibles son: {}",
                    known.join(", ")
                ));
            }
        }
    }
    if u.activo && unit_routes.is_empty() {
        return check.fail(format!(
            "{what}: una unidad activa necesita al menos una ruta"
        ));
    }
    if let Some(first) = unit_routes.first() {
        let depot = routes[*first].depot();
        for other in &unit_routes[1..] {
            let gap = distance_m(depot, routes[*other].depot());
            if gap > SAME_DEPOT_M {
                return check.fail(format!(
                    "{what}: las rutas '{}' y '{}' no salen del mismo depósito ({gap:.0} m de distancia)",
                    routes[*first].name, routes[*other].name
                ));
            }
        }
    }
    Ok(unit_routes)
}
