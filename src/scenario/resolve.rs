//! From a parsed scenario file to a checked [`World`]: every semantic rule, one message each.
//!
//! Owns the meaning checks that the TOML syntax cannot express: names that must exist, ranges
//! that must be ordered, geometry that must not be degenerate, zones that must be IANA names,
//! and the period `--ahora` ends. Shift rules and each unit's days are `shifts.rs`'s; the
//! injections (which must fall on a working day, fit in a shift, and not collide) are checked
//! in `injections.rs`; messages are worded and located by the [`Checker`]. The first problem
//! found is returned; nothing is simulated or written when any exists.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use chrono::{Duration, NaiveDate, NaiveDateTime};
use chrono_tz::Tz;

use super::absences;
use super::checker::Checker;
use super::error::Lines;
use super::file::{
    BehaviourFile, General, GeofenceFile, NoiseFile, ScenarioFile, UnitFile, VehicleTypeFile,
};
use super::injections::{Frame, injections, random_injections};
use super::shifts::{base_rules, first_loop_fits, unit_days, unit_rules};
use super::trackers::{self, TrackerProfile};
use super::{Ahora, Dynamics, ScenarioError, ShiftRule, Unit, World, plate_key};
use crate::calendar::{self, WEEKDAY_KEYS, weekday_named};
use crate::geometry::earth::distance_m;
use crate::geometry::geofence::{Geofence, Shape, ring_area_deg2};
use crate::geometry::route::Route;

/// Routes of one unit must start within this distance of each other.
const SAME_DEPOT_M: f64 = 300.0;

/// One piece: the order of the checks is the order of the file's tables, read top to bottom.
pub fn resolve(
    file: ScenarioFile,
    routes: BTreeMap<String, Route>,
    ahora: Ahora,
    (path, text): (&Path, &str),
    hash: String,
) -> Result<World, ScenarioError> {
    let lines = Lines::of(text);
    let check = Checker::new(path, text, &lines);
    let general = &file.escenario;
    let here = check.table("escenario");
    if general.nombre.trim().is_empty() {
        return here
            .key("nombre")
            .fail("[escenario] nombre no puede estar vacío");
    }
    let zone = zone_named(
        here.key("zona_horaria"),
        "[escenario] zona_horaria",
        &general.zona_horaria,
    )?;
    here.key("intervalo_reporte_s").value(
        "[escenario] intervalo_reporte_s",
        general.intervalo_reporte_s.into(),
        1.0,
        3600.0,
    )?;
    let (ahora_local, ahora_utc) = ahora_in_zone(check, zone, ahora)?;
    let days = period(here, general, ahora_local.date())?;

    let default_workdays = weekdays(
        check.table("calendario").key("dias_laborables"),
        "[calendario] dias_laborables",
        &file.calendario.dias_laborables,
    )?;
    let shift_rules = base_rules(check, &file.turno)?;
    let types = vehicle_types(check, &file.tipos)?;
    check.table("limites").key("velocidad_kmh").value(
        "[limites] velocidad_kmh",
        file.limites.velocidad_kmh,
        1.0,
        300.0,
    )?;
    behaviour(check.table("comportamiento"), &file.comportamiento)?;
    let noise = noise(check.table("ruido"), file.ruido.clone())?;
    let fences = geofences(check, &file.geocercas)?;
    let interval_s = i64::from(general.intervalo_reporte_s);
    let trackers = trackers::profiles(check, &file.rastreadores, interval_s)?;

    let route_list: Vec<Route> = routes.into_values().collect();
    let route_index: HashMap<&str, usize> = route_list
        .iter()
        .enumerate()
        .map(|(i, r)| (r.name.as_str(), i))
        .collect();
    let setting = UnitSetting {
        routes: &route_list,
        route_index: &route_index,
        types: &types,
        fleet_limit_kmh: file.limites.velocidad_kmh,
        default_workdays,
        shift_rules,
        zone,
        behaviour: &file.comportamiento,
        trackers: &trackers,
        interval_s,
    };
    let mut units = Vec::new();
    for (unit_file, at) in unit_files(check, &file)? {
        units.push(unit(check.at(Some(at)), &unit_file, &setting, &units)?);
    }
    if units.is_empty() {
        return check.fail("el escenario no tiene [[unidades]]");
    }
    let holidays = &file.calendario.feriados;
    let first = days.first().copied().unwrap_or(ahora_local.date());
    for (unit, (_, at)) in units.iter_mut().zip(unit_files(check, &file)?) {
        let works = |date: NaiveDate| works(unit, holidays, date);
        unit.days = unit_days(check.at(Some(at)), unit, first, ahora_utc, works)?;
    }

    let world_so_far = Frame {
        ahora_utc,
        units: &units,
        routes: &route_list,
        behaviour: &file.comportamiento,
    };
    let injections = injections(check, &file.inyecciones, &world_so_far)?;
    random_injections(check, &file.inyecciones, &world_so_far, &injections)?;

    Ok(World {
        name: general.nombre.clone(),
        description: general.descripcion.clone(),
        zone,
        seed: general.semilla,
        interval_s: general.intervalo_reporte_s.into(),
        ahora_utc,
        ahora_local,
        days,
        holidays: holidays.clone(),
        routes: route_list,
        fences,
        fleet_limit_kmh: file.limites.velocidad_kmh,
        units,
        trackers,
        behaviour: file.comportamiento.clone(),
        noise,
        injections,
        random: file.inyecciones.aleatorias.clone(),
        detection: file.deteccion.clone(),
        hash,
        path: path.to_path_buf(),
    })
}

/// Whether `unit` works on `date` (the same rule as [`World::works`]).
pub(super) fn works(unit: &Unit, holidays: &[NaiveDate], date: NaiveDate) -> bool {
    unit.active
        && unit.workdays[chrono::Datelike::weekday(&date).num_days_from_monday() as usize]
        && !holidays.contains(&date)
        && unit.absence_on(date).is_none()
}

fn zone_named(check: Checker, what: &str, name: &str) -> Result<Tz, ScenarioError> {
    name.trim().parse().or_else(|_| {
        check.fail(format!(
            "{what} '{name}' no es una zona IANA (p. ej. America/Guatemala, Europe/Madrid)"
        ))
    })
}

/// `--ahora` on the zone's clock (the wall clock is cut to the minute) and in UTC. A time the
/// clocks skip is refused; one they repeat is its first occurrence unless it has an offset.
fn ahora_in_zone(
    check: Checker,
    zone: Tz,
    ahora: Ahora,
) -> Result<(NaiveDateTime, i64), ScenarioError> {
    let ahora_utc = match ahora {
        Ahora::Local(wall) => {
            calendar::instant(zone, wall).or_else(|err| check.fail(format!("--ahora {err}")))?
        }
        Ahora::NowUtc(secs) => secs - secs.rem_euclid(60),
    };
    let ahora_local = calendar::local(zone, ahora_utc).naive_local();
    Ok((ahora_local, ahora_utc))
}

/// The simulated dates, ending with the day of `--ahora` (`last_day`).
fn period(
    check: Checker,
    general: &General,
    last_day: NaiveDate,
) -> Result<Vec<NaiveDate>, ScenarioError> {
    let first_day = match (general.dias, general.desde) {
        (Some(_), Some(_)) => return check.fail("[escenario] use 'dias' o 'desde', no ambos"),
        (None, None) => return check.fail("[escenario] falta 'dias' (o 'desde')"),
        (Some(days), None) => {
            check
                .key("dias")
                .value("[escenario] dias", days.into(), 1.0, 3660.0)?;
            last_day - Duration::days(i64::from(days) - 1)
        }
        (None, Some(from)) => {
            if from > last_day {
                return check.key("desde").fail(format!(
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

/// `[[unidades]]` followed by every `[[flotillas]]` group expanded, each with where its table
/// is written.
fn unit_files(
    check: Checker,
    file: &ScenarioFile,
) -> Result<Vec<(UnitFile, usize)>, ScenarioError> {
    let mut unit_files: Vec<(UnitFile, usize)> = file
        .unidades
        .iter()
        .map(|u| (u.get_ref().clone(), u.span().start))
        .collect();
    for (index, group) in file.flotillas.iter().enumerate() {
        let at = group.span().start;
        let group = group.get_ref();
        if group.cantidad == 0 || group.cantidad > 100_000 {
            return check.at(Some(at)).key("cantidad").fail(format!(
                "[[flotillas]] #{}: cantidad = {} fuera de los límites [1, 100000]",
                index + 1,
                group.cantidad
            ));
        }
        unit_files.extend(group.expand().into_iter().map(|u| (u, at)));
    }
    Ok(unit_files)
}

fn weekdays(check: Checker, what: &str, names: &[String]) -> Result<[bool; 7], ScenarioError> {
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
        rastreador: None,
    })
}

fn vehicle_types(
    check: Checker,
    types: &BTreeMap<String, VehicleTypeFile>,
) -> Result<BTreeMap<String, VehicleTypeFile>, ScenarioError> {
    for (name, t) in types {
        let what = format!("[tipos.{name}]");
        let here = check.table(&format!("tipos.{name}"));
        let values = [
            ("aceleracion_ms2", t.aceleracion_ms2, 0.1, 10.0),
            ("frenado_ms2", t.frenado_ms2, 0.1, 10.0),
            ("velocidad_max_kmh", t.velocidad_max_kmh, 10.0, 300.0),
        ];
        for (key, value, min, max) in values {
            here.key(key)
                .value(&format!("{what} {key}"), value, min, max)?;
        }
        if let Some(limit) = t.limite_kmh {
            here.key("limite_kmh")
                .value(&format!("{what} limite_kmh"), limit, 1.0, 300.0)?;
        }
    }
    Ok(types.clone())
}

fn behaviour(check: Checker, b: &BehaviourFile) -> Result<(), ScenarioError> {
    let ranges = [
        ("espera_inicial_min", b.espera_inicial_min, 0.0, 600.0),
        ("espera_parada_min", b.espera_parada_min, 0.0, 600.0),
        ("espera_deposito_min", b.espera_deposito_min, 0.0, 600.0),
        ("espera_final_min", b.espera_final_min, 0.0, 600.0),
        ("variacion_velocidad", b.variacion_velocidad, 0.1, 3.0),
        ("cambio_velocidad_s", b.cambio_velocidad_s, 1.0, 3600.0),
        ("semaforo_s", b.semaforo_s, 1.0, 600.0),
    ];
    for (key, range, min, max) in ranges {
        check
            .key(key)
            .range(&format!("[comportamiento] {key}"), range, min, max)?;
    }
    let values = [
        ("cumplimiento_limite", b.cumplimiento_limite, 0.3, 1.0),
        ("semaforos_por_km", b.semaforos_por_km, 0.0, 20.0),
        ("reportes_apagado_min", b.reportes_apagado_min, 0.0, 120.0),
        ("margen_vuelta", b.margen_vuelta, 1.0, 5.0),
    ];
    for (key, value, min, max) in values {
        check
            .key(key)
            .value(&format!("[comportamiento] {key}"), value, min, max)?;
    }
    Ok(())
}

fn noise(check: Checker, mut n: NoiseFile) -> Result<NoiseFile, ScenarioError> {
    let jitter = n.jitter_estacionado_m.unwrap_or(n.sigma_m);
    let values = [
        ("sigma_m", n.sigma_m, 0.0, 500.0),
        ("deriva_sigma_m", n.deriva_sigma_m, 0.0, 500.0),
        ("deriva_tau_s", n.deriva_tau_s, 1.0, 86_400.0),
        ("saltos_probabilidad", n.saltos_probabilidad, 0.0, 1.0),
        ("saltos_m", n.saltos_m, 0.0, 10_000.0),
        ("velocidad_sigma_kmh", n.velocidad_sigma_kmh, 0.0, 50.0),
        ("umbral_estatico_kmh", n.umbral_estatico_kmh, 0.0, 30.0),
        ("rumbo_sigma_grados", n.rumbo_sigma_grados, 0.0, 180.0),
        (
            "duplicados_probabilidad",
            n.duplicados_probabilidad,
            0.0,
            1.0,
        ),
        (
            "retrasados_probabilidad",
            n.retrasados_probabilidad,
            0.0,
            1.0,
        ),
        ("jitter_estacionado_m", jitter, 0.0, 500.0),
    ];
    for (key, value, min, max) in values {
        check
            .key(key)
            .value(&format!("[ruido] {key}"), value, min, max)?;
    }
    check
        .key("retraso_s")
        .range("[ruido] retraso_s", n.retraso_s, 0.0, 86_400.0)?;
    n.jitter_estacionado_m = Some(jitter);
    Ok(n)
}

fn geofences(
    check: Checker,
    files: &[toml::Spanned<GeofenceFile>],
) -> Result<Vec<Geofence>, ScenarioError> {
    let mut seen = HashSet::new();
    let mut fences = Vec::new();
    for spanned in files {
        let check = check.at(Some(spanned.span().start));
        let f = spanned.get_ref();
        let what = format!("geocerca '{}'", f.nombre);
        if f.nombre.trim().is_empty() {
            return check.fail("[[geocercas]] nombre no puede estar vacío");
        }
        if !seen.insert(f.nombre.trim().to_lowercase()) {
            return check.key("nombre").fail(format!("{what} está repetida"));
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
            let check = check.key("cuadrado");
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
            let check = check.key("circulo");
            check.value(&format!("{what} radio_m"), circle.radio_m, 1.0, 100_000.0)?;
            Shape::Circle {
                centre: check.latlon(&format!("{what} centro"), circle.centro)?,
                radius_m: circle.radio_m,
            }
        } else {
            let check = check.key("poligono");
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
            check
                .key("limite_kmh")
                .value(&format!("{what} limite_kmh"), limit, 1.0, 300.0)?;
        }
        let fence = Geofence::new(
            f.nombre.trim().to_owned(),
            f.tipo.clone(),
            shape,
            f.limite_kmh,
        );
        if fence.crosses_antimeridian() {
            return check.fail(format!(
                "{what} cruza el antimeridiano (longitud ±180°): flota no admite geocercas que lo \
                 crucen (mide en grados de longitud sin dar la vuelta en ±180°); dibújela a un solo \
                 lado del meridiano 180"
            ));
        }
        fences.push(fence);
    }
    Ok(fences)
}

/// What every unit is resolved against.
struct UnitSetting<'a> {
    routes: &'a [Route],
    route_index: &'a HashMap<&'a str, usize>,
    types: &'a BTreeMap<String, VehicleTypeFile>,
    fleet_limit_kmh: f64,
    default_workdays: [bool; 7],
    shift_rules: [ShiftRule; 7],
    zone: Tz,
    behaviour: &'a BehaviourFile,
    trackers: &'a BTreeMap<String, TrackerProfile>,
    interval_s: i64,
}

/// One `[[unidades]]` entry (or a unit of a group), checked against those before it; its days
/// come later, once every unit is known.
fn unit(
    check: Checker,
    u: &UnitFile,
    setting: &UnitSetting,
    before: &[Unit],
) -> Result<Unit, ScenarioError> {
    let what = format!("unidad '{}'", u.placa);
    let key = plate_key(&u.placa);
    if key.is_empty() {
        return check
            .key("placa")
            .fail("[[unidades]] placa no puede estar vacía");
    }
    if before.iter().any(|b| plate_key(&b.plate) == key) {
        return check.key("placa").fail(format!("{what}: placa repetida"));
    }
    let kind = unit_type(check.key("tipo"), &what, &u.tipo, setting.types)?;
    let unit_routes = unit_routes(check.key("rutas"), &what, u, setting)?;
    let workdays = match &u.dias_laborables {
        Some(names) => weekdays(
            check.key("dias_laborables"),
            &format!("{what} dias_laborables"),
            names,
        )?,
        None => setting.default_workdays,
    };
    let shifts = unit_rules(check, &what, setting.shift_rules, u.turno.as_ref())?;
    let absences = absences::absences(check, &what, &u.ausencias)?;
    let zone = match &u.zona_horaria {
        Some(name) => zone_named(
            check.key("zona_horaria"),
            &format!("{what} zona_horaria"),
            name,
        )?,
        None => setting.zone,
    };
    if let Some(km) = u.odometro_inicial_km {
        check.key("odometro_inicial_km").value(
            &format!("{what} odometro_inicial_km"),
            km,
            0.0,
            10_000_000.0,
        )?;
    }
    let tracker = trackers::of_unit(
        check,
        &what,
        u.rastreador.as_deref().or(kind.rastreador.as_deref()),
        setting.trackers,
        setting.interval_s,
    )?;
    let unit = Unit {
        plate: u.placa.trim().to_owned(),
        kind: u.tipo.clone(),
        driver: u.conductor.clone(),
        routes: unit_routes,
        active: u.activo,
        zone,
        workdays,
        shifts,
        dynamics: Dynamics {
            accel_ms2: kind.aceleracion_ms2,
            brake_ms2: kind.frenado_ms2,
            top_speed_kmh: kind.velocidad_max_kmh,
        },
        limit_kmh: kind.limite_kmh.unwrap_or(setting.fleet_limit_kmh),
        odometer_start_km: u.odometro_inicial_km,
        tracker,
        absences,
        days: Vec::new(),
    };
    if unit.active {
        first_loop_fits(check, &unit, setting.routes, setting.behaviour)?;
    }
    Ok(unit)
}

/// The unit's vehicle type: the scenario's `[tipos.*]`, else a built-in one.
fn unit_type(
    check: Checker,
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
    check: Checker,
    what: &str,
    u: &UnitFile,
    setting: &UnitSetting,
) -> Result<Vec<usize>, ScenarioError> {
    let (routes, route_index) = (setting.routes, setting.route_index);
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
