//! The fleet's MCP prompts: ready-made requests an operator picks from a menu, each one
//! assembling a Spanish message that tells the model which tools to call, with which
//! arguments, and how to present the answer.
//!
//! `informe_diario {fecha?}` (the day's report, with the data set embedded), `revision_alertas
//! {fecha_inicio, fecha_fin?, nombre_geocerca?}` (alerts over a range), `estado_unidad {placa,
//! fecha?}` (one unit now and that day). Arguments are checked against the [`Fleet`] (a plate
//! that does not exist, a date it cannot read) so the operator hears at once, and complete
//! (plates, geofence names, date words). No tool runs here: the model calls them.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::fleet::Fleet;
use crate::mcp::{
    Content, Prompt, PromptArgument, PromptDefinition, PromptMessage, PromptReply, RequestInfo,
};
use crate::resources::{complete_dates, complete_fences, complete_plates};

/// Every fleet prompt, in the order `prompts/list` shows them.
pub fn all(fleet: &Arc<Fleet>) -> Vec<Box<dyn Prompt>> {
    vec![
        Box::new(DailyReport::new(fleet)),
        Box::new(AlertReview::new(fleet)),
        Box::new(UnitStatus::new(fleet)),
    ]
}

fn argument(name: &str, description: &str, required: bool) -> PromptArgument {
    PromptArgument {
        name: name.into(),
        description: Some(description.into()),
        required,
    }
}

fn definition(
    name: &str,
    title: &str,
    description: &str,
    arguments: Vec<PromptArgument>,
) -> PromptDefinition {
    PromptDefinition {
        name: name.into(),
        title: Some(title.into()),
        description: Some(description.into()),
        arguments,
    }
}

/// A date argument (default `hoy`) as the tools will read it, with its weekday, or why not.
fn day(fleet: &Fleet, argument: &str, text: Option<&String>) -> Result<(String, String), String> {
    let text = text.map_or("hoy", String::as_str);
    let snapshot = fleet.snapshot().map_err(|e| e.to_string())?;
    let date = snapshot.date(argument, text).map_err(|e| e.to_string())?;
    Ok((date.to_string(), crate::fleet::dates::long_es(date)))
}

/// Completes the arguments every prompt shares.
fn complete_common(fleet: &Fleet, name: &str, value: &str) -> Vec<String> {
    match name {
        "placa" => complete_plates(fleet, value),
        "nombre_geocerca" => complete_fences(fleet, value),
        n if n.starts_with("fecha") => complete_dates(fleet, value),
        _ => Vec::new(),
    }
}

fn text(message: String) -> PromptMessage {
    PromptMessage::user(Content::Text(message))
}

// --- informe_diario ---------------------------------------------------------------------

struct DailyReport {
    definition: PromptDefinition,
    fleet: Arc<Fleet>,
}

impl DailyReport {
    fn new(fleet: &Arc<Fleet>) -> Self {
        DailyReport {
            definition: definition(
                "informe_diario",
                "Informe diario de la flota",
                "Kilómetros, alertas y unidades detenidas de un día, con un resumen por unidad.",
                vec![argument(
                    "fecha",
                    "Día del informe: AAAA-MM-DD, DD/MM/AAAA, hoy, ayer o un día de la semana (por defecto hoy)",
                    false,
                )],
            ),
            fleet: Arc::clone(fleet),
        }
    }
}

impl Prompt for DailyReport {
    fn definition(&self) -> &PromptDefinition {
        &self.definition
    }

    fn get(
        &self,
        arguments: &BTreeMap<String, String>,
        _: &RequestInfo,
    ) -> Result<PromptReply, String> {
        let (date, long) = day(&self.fleet, "fecha", arguments.get("fecha"))?;
        let request = format!(
            "Prepara el informe diario de la flota del {long} ({date}).\n\
             1. Llama a reporte_kilometraje con fecha_inicio={date} y fecha_fin={date}.\n\
             2. Llama a alertas con fecha_inicio={date} y fecha_fin={date}.\n\
             3. Si el día es hoy, llama a unidades_detenidas para saber quién está parado ahora.\n\
             4. Para las unidades con alertas o sin recorrido, llama a resumen_recorrido con su \
             placa y fecha={date}.\n\
             Presenta: un párrafo de resumen (km totales, unidades activas, alertas por tipo), una \
             tabla por unidad (placa, km, tiempo en movimiento, alertas) y al final lo que \
             requiere atención. Si una herramienta devuelve un aviso sobre las detecciones, \
             dilo al principio. Usa horas locales de la flota."
        );
        let mut messages = vec![text(request)];
        // The data set (window, zone, whether detections are current) as context.
        if let Some(datos) = crate::resources::all(&self.fleet)
            .into_iter()
            .find(|r| r.definition().uri == "flota://datos")
            && let Ok(mut contents) = datos.read()
            && let Some(first) = contents.pop()
        {
            messages.push(PromptMessage::user(Content::Resource(first)));
        }
        Ok(PromptReply::new(
            Some(format!("Informe diario del {long}")),
            messages,
        ))
    }

    fn complete(&self, name: &str, value: &str, _: &BTreeMap<String, String>) -> Vec<String> {
        complete_common(&self.fleet, name, value)
    }
}

// --- revision_alertas -------------------------------------------------------------------

struct AlertReview {
    definition: PromptDefinition,
    fleet: Arc<Fleet>,
}

impl AlertReview {
    fn new(fleet: &Arc<Fleet>) -> Self {
        AlertReview {
            definition: definition(
                "revision_alertas",
                "Revisión de alertas",
                "Las alertas de un rango de días (excesos de velocidad, paradas prolongadas, pérdidas de señal, geocercas), agrupadas y explicadas.",
                vec![
                    argument(
                        "fecha_inicio",
                        "Primer día del rango (AAAA-MM-DD, ayer, lunes…)",
                        true,
                    ),
                    argument(
                        "fecha_fin",
                        "Último día del rango (por defecto el mismo que fecha_inicio)",
                        false,
                    ),
                    argument(
                        "nombre_geocerca",
                        "Si se da, revisar también las visitas de las unidades a esta geocerca",
                        false,
                    ),
                ],
            ),
            fleet: Arc::clone(fleet),
        }
    }
}

impl Prompt for AlertReview {
    fn definition(&self) -> &PromptDefinition {
        &self.definition
    }

    fn get(
        &self,
        arguments: &BTreeMap<String, String>,
        _: &RequestInfo,
    ) -> Result<PromptReply, String> {
        let (start, start_long) = day(&self.fleet, "fecha_inicio", arguments.get("fecha_inicio"))?;
        let end_text = arguments.get("fecha_fin").or(arguments.get("fecha_inicio"));
        let (end, end_long) = day(&self.fleet, "fecha_fin", end_text)?;
        if end < start {
            return Err(format!(
                "fecha_fin ({end}) es anterior a fecha_inicio ({start})"
            ));
        }
        let mut request = format!(
            "Revisa las alertas de la flota del {start_long} al {end_long}.\n\
             1. Llama a alertas con fecha_inicio={start} y fecha_fin={end}.\n\
             2. Agrupa por tipo y por unidad; señala las unidades que se repiten y los \
             horarios en que se concentran.\n\
             3. Para la unidad con más alertas, llama a resumen_recorrido con su placa y el día \
             con más alertas, y explica qué pasó."
        );
        if let Some(name) = arguments.get("nombre_geocerca") {
            let snapshot = self.fleet.snapshot().map_err(|e| e.to_string())?;
            let fence = snapshot.fence(name).map_err(|e| e.to_string())?;
            request.push_str(&format!(
                "\n4. Revisa también la geocerca «{}»: para las unidades con alertas de \
                 geocerca, llama a verificar_geocerca con su placa, nombre_geocerca=«{}» y cada \
                 día del rango.",
                fence.fence.name, fence.fence.name
            ));
        }
        request.push_str(
            "\nTermina con recomendaciones concretas (conductor, horario, tramo). Usa horas \
             locales de la flota.",
        );
        Ok(PromptReply::new(
            Some(format!("Alertas del {start} al {end}")),
            vec![text(request)],
        ))
    }

    fn complete(&self, name: &str, value: &str, _: &BTreeMap<String, String>) -> Vec<String> {
        complete_common(&self.fleet, name, value)
    }
}

// --- estado_unidad ----------------------------------------------------------------------

struct UnitStatus {
    definition: PromptDefinition,
    fleet: Arc<Fleet>,
}

impl UnitStatus {
    fn new(fleet: &Arc<Fleet>) -> Self {
        UnitStatus {
            definition: definition(
                "estado_unidad",
                "Estado de una unidad",
                "Dónde está una unidad, qué hizo en el día y si tuvo alertas, con su mapa.",
                vec![
                    argument(
                        "placa",
                        "Placa de la unidad (acepta minúsculas y espacios)",
                        true,
                    ),
                    argument("fecha", "Día a revisar (por defecto hoy)", false),
                ],
            ),
            fleet: Arc::clone(fleet),
        }
    }
}

impl Prompt for UnitStatus {
    fn definition(&self) -> &PromptDefinition {
        &self.definition
    }

    fn get(
        &self,
        arguments: &BTreeMap<String, String>,
        _: &RequestInfo,
    ) -> Result<PromptReply, String> {
        let asked = arguments
            .get("placa")
            .map(String::as_str)
            .unwrap_or_default();
        let snapshot = self.fleet.snapshot().map_err(|e| e.to_string())?;
        let plate = snapshot
            .vehicle(asked)
            .map_err(|e| e.to_string())?
            .plate
            .clone();
        let (date, long) = day(&self.fleet, "fecha", arguments.get("fecha"))?;
        let request = format!(
            "Dame el estado de la unidad {plate} el {long} ({date}).\n\
             1. Llama a posicion_actual con placa={plate}.\n\
             2. Llama a resumen_recorrido con placa={plate} y fecha={date}.\n\
             3. Llama a mapa_recorrido con placa={plate} y fecha={date} y muestra el mapa.\n\
             Responde primero dónde está y desde cuándo; luego el recorrido del día (km, \
             paradas, alertas) en pocas líneas. Usa horas locales de la flota."
        );
        Ok(PromptReply::new(
            Some(format!("Estado de {plate} el {date}")),
            vec![text(request)],
        ))
    }

    fn complete(&self, name: &str, value: &str, _: &BTreeMap<String, String>) -> Vec<String> {
        complete_common(&self.fleet, name, value)
    }
}
