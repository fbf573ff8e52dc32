//! The fleet tools' contract through the real server: names and arguments, normalisation,
//! Spanish business errors, caps, schemas.

use serde_json::{Value, json};

use crate::ground_truth::{Client, fixture};
use crate::support::Server;

#[test]
fn tools_list_has_the_reference_names_and_full_metadata() {
    let fixture = fixture("minimo");
    let mut server = Server::spawn(
        crate::support::flota_bin(),
        &["servir", "--db", fixture.db.to_str().unwrap()],
    );
    server.initialize("2025-11-25");
    server.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let tools = server.recv()["result"]["tools"].as_array().unwrap().clone();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "posicion_actual",
            "unidades_detenidas",
            "resumen_recorrido",
            "mapa_recorrido",
            "mapa_flota",
            "alertas",
            "verificar_geocerca",
            "reporte_kilometraje"
        ]
    );
    // Only formats JSON Schema defines: strict validators (Ajv in the MCP Inspector) warn
    // about schemars' OpenAPI-style `uint`, `int32`, `double`.
    let listing = serde_json::to_string(&tools).unwrap();
    for format in ["uint", "int8", "int16", "int32", "int64", "float", "double"] {
        assert!(
            !listing.contains(&format!("\"format\":\"{format}")),
            "non-standard format {format}"
        );
    }
    for tool in &tools {
        let schema = &tool["inputSchema"];
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(
            flota::mcp::schema::unsupported_keywords(schema),
            Vec::<String>::new(),
            "{}",
            tool["name"]
        );
        assert_eq!(
            flota::mcp::schema::unsupported_keywords(&tool["outputSchema"]),
            Vec::<String>::new()
        );
        assert_eq!(tool["annotations"]["readOnlyHint"], true);
        // Tiles are switched off here, so even the map touches nothing outside.
        assert_eq!(
            tool["annotations"]["openWorldHint"], false,
            "{}",
            tool["name"]
        );
        assert!(
            tool["description"].as_str().unwrap().contains('«'),
            "examples in {}",
            tool["name"]
        );
    }
    // The argument names are a contract with the model and its prompts: pinned here.
    let args = |name: &str| -> Vec<String> {
        let tool = tools.iter().find(|t| t["name"] == name).unwrap();
        tool["inputSchema"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    assert_eq!(args("posicion_actual"), ["placa"]);
    assert_eq!(args("unidades_detenidas"), ["minutos_minimos"]);
    assert_eq!(args("resumen_recorrido"), ["placa", "fecha"]);
    assert_eq!(args("mapa_recorrido"), ["placa", "fecha"]);
    assert_eq!(args("alertas"), ["tipo", "fecha_inicio", "fecha_fin"]);
    assert_eq!(
        args("verificar_geocerca"),
        ["placa", "nombre_geocerca", "fecha"]
    );
    assert_eq!(args("reporte_kilometraje"), ["fecha_inicio", "fecha_fin"]);
}

/// Calls `tool` and returns either "ok" plus the value or the error text.
fn check(client: &mut Client, tool: &str, arguments: Value, expected: &str) -> Option<Value> {
    match client.call(tool, arguments.clone()) {
        Ok(value) => {
            assert_eq!(expected, "ok", "{tool} {arguments} answered {value}");
            Some(value)
        }
        Err(text) => {
            assert!(
                text.contains(expected),
                "{tool} {arguments}: expected {expected:?} in {text:?}"
            );
            None
        }
    }
}

#[test]
fn plates_names_and_dates_are_forgiving_and_errors_actionable() {
    let fixture = fixture("semana");
    let mut c = Client::new(&fixture.db);
    let position = check(
        &mut c,
        "posicion_actual",
        json!({"placa": "p 123 bcd"}),
        "ok",
    )
    .unwrap();
    assert_eq!(position["placa"], "P-123BCD");
    check(
        &mut c,
        "posicion_actual",
        json!({"placa": "P-123BCE"}),
        "¿Quiso decir P-123BCD?",
    );
    check(
        &mut c,
        "posicion_actual",
        json!({"placa": "ZZZ"}),
        "Las placas registradas son: P-112GHK,",
    );
    check(
        &mut c,
        "posicion_actual",
        json!({"placa": "P-667ZBC"}),
        "está dada de baja",
    );
    check(
        &mut c,
        "posicion_actual",
        json!({"placa": "'; DROP TABLE vehiculos; --"}),
        "No existe la placa",
    );
    let day = check(
        &mut c,
        "resumen_recorrido",
        json!({"placa": "P-456DEF", "fecha": "ayer"}),
        "ok",
    )
    .unwrap();
    assert_eq!(day["fecha"], "2026-08-18");
    assert_eq!(day["dia_semana"], "martes");
    assert_eq!(day["zona_horaria"], "America/Guatemala");
    let monday = check(
        &mut c,
        "resumen_recorrido",
        json!({"placa": "P-456DEF", "fecha": "lunes"}),
        "ok",
    )
    .unwrap();
    assert_eq!(monday["fecha"], "2026-08-17");
    check(
        &mut c,
        "resumen_recorrido",
        json!({"placa": "P-456DEF", "fecha": "2020-01-01"}),
        "no tiene reportes el miércoles (2020-01-01)",
    );
    // The local habit, DD/MM/AAAA, names the same day as the ISO form.
    let local = check(
        &mut c,
        "resumen_recorrido",
        json!({"placa": "P-456DEF", "fecha": "18/08/2026"}),
        "ok",
    )
    .unwrap();
    assert_eq!(local, day);
    check(
        &mut c,
        "resumen_recorrido",
        json!({"placa": "P-456DEF", "fecha": "08/18/2026"}),
        "debe ser una fecha AAAA-MM-DD o DD/MM/AAAA",
    );
    check(
        &mut c,
        "resumen_recorrido",
        json!({"placa": "P-456DEF", "fecha": "domingo"}),
        "no tiene reportes el domingo",
    );
    let fence = check(
        &mut c,
        "verificar_geocerca",
        json!({"placa": "P-456DEF", "nombre_geocerca": "cedis", "fecha": "ayer"}),
        "ok",
    )
    .unwrap();
    assert_eq!(fence["geocerca"], "CEDIS Zona 12");
    check(
        &mut c,
        "verificar_geocerca",
        json!({"placa": "P-456DEF", "nombre_geocerca": "centro historico", "fecha": "ayer"}),
        "ok",
    );
    check(
        &mut c,
        "verificar_geocerca",
        json!({"placa": "P-456DEF", "nombre_geocerca": "bodega", "fecha": "ayer"}),
        "es ambiguo: coincide con Bodega Villa Nueva, Bodega Mixco",
    );
    check(
        &mut c,
        "verificar_geocerca",
        json!({"placa": "P-456DEF", "nombre_geocerca": "Marte", "fecha": "ayer"}),
        "No existe la geocerca 'Marte'",
    );
    let never = check(
        &mut c,
        "verificar_geocerca",
        json!({"placa": "P-789GHJ", "nombre_geocerca": "CD Zona 18", "fecha": "ayer"}),
        "ok",
    )
    .unwrap();
    assert_eq!(
        (never["entro"].clone(), never["numero_visitas"].clone()),
        (json!(false), json!(0))
    );
    check(
        &mut c,
        "alertas",
        json!({"fecha_inicio": "hoy", "fecha_fin": "ayer"}),
        "es anterior a fecha_inicio",
    );
    check(
        &mut c,
        "alertas",
        json!({"fecha_inicio": "2026-01-01", "fecha_fin": "hoy"}),
        "el máximo es 93",
    );
    check(
        &mut c,
        "reporte_kilometraje",
        json!({"fecha_inicio": "2020-01-01", "fecha_fin": "2020-01-07"}),
        "Ninguna unidad reportó",
    );
    let quiet = check(
        &mut c,
        "alertas",
        json!({"tipo": "perdida_senal", "fecha_inicio": "2020-01-01", "fecha_fin": "2020-01-02"}),
        "ok",
    )
    .unwrap();
    assert_eq!(quiet["total_eventos"], 0);
}

#[test]
fn alert_details_are_capped_with_their_real_total() {
    let fixture = fixture("semana");
    let mut c = Client::new(&fixture.db);
    let alerts = c.ok(
        "alertas",
        json!({"tipo": "geocerca_entrada", "fecha_inicio": "2026-08-13", "fecha_fin": "hoy"}),
    );
    assert!(alerts["total_eventos"].as_u64().unwrap() > 200);
    assert!(alerts["detalle"][0]["eventos"].as_array().unwrap().len() <= 10);
    assert_eq!(alerts["detalle"][0]["total"], alerts["total_eventos"]);
}

/// More units than a list may carry: one short day of 230 units, all parked at "now".
fn big_fleet(dir: &std::path::Path) -> std::path::PathBuf {
    let routes = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("rutas");
    let scenario = dir.join("grande.toml");
    std::fs::write(
        &scenario,
        format!(
            r#"[escenario]
nombre = "grande"
descripcion = "Más unidades de las que cabe listar"
zona_horaria = "America/Guatemala"
dias = 1
intervalo_reporte_s = 60
semilla = 5
rutas = "{}"

[turno]
inicio = ["06:00", "07:00"]
duracion_h = [3.0, 3.5]

[[geocercas]]
nombre = "CEDIS Zona 12"
tipo = "bodega"
cuadrado = {{ centro = [14.5850, -90.5450], medio_lado_m = 260 }}

[[flotillas]]
prefijo = "G"
cantidad = {UNITS}
tipo = "panel"
rutas = ["r01_cedis_z1_z4", "r02_cedis_z10_cayala"]
"#,
            routes.display()
        ),
    )
    .unwrap();
    let (ok, stderr, db, _) = crate::simulation::simulate_file(&scenario, dir, &[]);
    assert!(ok, "{stderr}");
    db
}

const UNITS: usize = 230;

/// Every list of units stops at 200 rows, and its real total travels beside it.
#[test]
fn unit_lists_are_capped_at_200_with_their_real_total() {
    let dir = tempfile::tempdir().unwrap();
    let db = big_fleet(dir.path());
    let mut c = Client::new(&db);
    let cap = flota::tools::MAX_ROWS;
    assert_eq!(cap, 200);

    let stopped = c.ok("unidades_detenidas", json!({"minutos_minimos": 0}));
    assert_eq!(stopped["total"], UNITS);
    assert_eq!(stopped["unidades"].as_array().unwrap().len(), cap);
    let states = &stopped["por_estado"];
    let counted: u64 = ["motor_encendido", "apagada", "sin_senal"]
        .iter()
        .map(|k| states[k].as_u64().unwrap())
        .sum();
    assert_eq!(counted as usize, UNITS, "{states}");

    let km = c.ok(
        "reporte_kilometraje",
        json!({"fecha_inicio": "hoy", "fecha_fin": "hoy"}),
    );
    assert_eq!(km["total_unidades"], UNITS);
    let ranking = km["ranking"].as_array().unwrap();
    assert_eq!(ranking.len(), cap);
    assert_eq!(ranking[cap - 1]["puesto"], cap);

    let entries = c.ok(
        "alertas",
        json!({"tipo": "geocerca_entrada", "fecha_inicio": "hoy", "fecha_fin": "hoy"}),
    );
    assert_eq!(entries["total_unidades"], UNITS);
    assert_eq!(entries["por_unidad"].as_array().unwrap().len(), cap);
}

#[test]
fn alert_severity_is_ordered_within_each_type() {
    let fixture = fixture("semana");
    let mut c = Client::new(&fixture.db);
    let alerts = c.ok(
        "alertas",
        json!({"fecha_inicio": "2026-08-13", "fecha_fin": "hoy"}),
    );
    let detail = alerts["detalle"].as_array().unwrap();
    assert!(
        detail
            .iter()
            .all(|d| !d["tipo"].as_str().unwrap().starts_with("geocerca"))
    );
    let speeding = detail
        .iter()
        .find(|d| d["tipo"] == "exceso_velocidad")
        .unwrap();
    let over: Vec<f64> = speeding["eventos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["exceso_kmh"].as_f64().unwrap())
        .collect();
    assert!(over.windows(2).all(|w| w[0] >= w[1]), "{over:?}");
    let long = detail
        .iter()
        .find(|d| d["tipo"] == "parada_prolongada")
        .unwrap();
    let minutes: Vec<f64> = long["eventos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["minutos"].as_f64().unwrap())
        .collect();
    assert!(minutes.windows(2).all(|w| w[0] >= w[1]), "{minutes:?}");
    assert_eq!(alerts["por_tipo"]["exceso_velocidad"], 12);
}

/// Asking for one type of alert lists that type only, but `por_tipo` still counts every type
/// (a zero there is a zero, never "not counted").
#[test]
fn alert_counts_per_type_do_not_depend_on_the_type_asked_for() {
    let fixture = fixture("semana");
    let mut c = Client::new(&fixture.db);
    let week = json!({"fecha_inicio": "2026-08-13", "fecha_fin": "hoy"});
    let all = c.ok("alertas", week.clone());
    let counts = &all["por_tipo"];
    let kinds = [
        "exceso_velocidad",
        "parada_prolongada",
        "perdida_senal",
        "geocerca_entrada",
        "geocerca_salida",
    ];
    // The week has some of every type, or the comparison below proves nothing.
    for kind in kinds {
        assert!(counts[kind].as_u64().unwrap() > 0, "{kind}: {counts}");
    }
    for kind in kinds {
        let mut asked = week.clone();
        asked["tipo"] = json!(kind);
        let one = c.ok("alertas", asked);
        assert_eq!(&one["por_tipo"], counts, "tipo {kind}");
        assert_eq!(one["total_eventos"], counts[kind], "tipo {kind}");
        for detail in one["detalle"].as_array().unwrap() {
            assert_eq!(detail["tipo"], kind);
        }
    }
}

#[test]
fn a_missing_database_is_an_error_with_the_fix_and_the_server_still_starts() {
    let mut server = Server::spawn(
        crate::support::flota_bin(),
        &["servir", "--db", "/nonexistent/dir/flota.db"],
    );
    let init = server.initialize("2025-11-25");
    assert!(
        init["instructions"]
            .as_str()
            .unwrap()
            .contains("no hay datos")
    );
    let answer = server.call(1, "posicion_actual", json!({"placa": "P-123BCD"}));
    assert_eq!(answer["result"]["isError"], true);
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("flota simular --salida /nonexistent/dir/flota.db"),
        "{text}"
    );
}

#[test]
fn the_server_answers_as_of_an_earlier_now() {
    let fixture = fixture("semana");
    let mut server = Server::spawn(
        crate::support::flota_bin(),
        &[
            "servir",
            "--db",
            fixture.db.to_str().unwrap(),
            "--ahora",
            "2026-08-18T10:00",
        ],
    );
    let init = server.initialize("2025-11-25");
    assert!(
        init["instructions"]
            .as_str()
            .unwrap()
            .contains("martes 2026-08-18, 10:00"),
        "{}",
        init["instructions"]
    );
    let answer = server.call(
        1,
        "resumen_recorrido",
        json!({"placa": "P-456DEF", "fecha": "hoy"}),
    );
    let day = &answer["result"]["structuredContent"];
    assert_eq!(day["fecha"], "2026-08-18");
    let position = server.call(2, "posicion_actual", json!({"placa": "P-456DEF"}));
    assert!(
        position["result"]["structuredContent"]["ultimo_reporte"]
            .as_str()
            .unwrap()
            .starts_with("2026-08-18T09:59:")
            || position["result"]["structuredContent"]["ultimo_reporte"]
                .as_str()
                .unwrap()
                .starts_with("2026-08-18T10:00:00")
    );
}
