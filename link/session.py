"""A `flota servir` session as a chat client holds one: the handshake, every list, each
tool once (one of them refused), then N maps (`mapa_recorrido`, one in ten `mapa_flota`).

Usage: session.py "COMMAND PREFIX" DATABASE N. The prefix runs the binary (under valgrind,
for regenerate.sh); the database is a simulated week.
"""
import subprocess,json,sys,os,datetime,time
cmd=sys.argv[1].split(); db=sys.argv[2]; nmaps=int(sys.argv[3])
p=subprocess.Popen(cmd+["servir","--db",db],stdin=subprocess.PIPE,stdout=subprocess.PIPE,stderr=subprocess.DEVNULL,env=dict(os.environ,FLOTA_LOG="error",FLOTA_TILES_URL="no"),text=True)
n=[0]
def rpc(method,params=None,notif=False):
    m={"jsonrpc":"2.0","method":method}
    if params is not None: m["params"]=params
    if not notif: n[0]+=1; m["id"]=n[0]
    p.stdin.write(json.dumps(m)+"\n"); p.stdin.flush()
    if not notif: return json.loads(p.stdout.readline())
rpc("initialize",{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}})
rpc("notifications/initialized",notif=True)
for m in ("tools/list","prompts/list","resources/list","resources/templates/list","ping"): rpc(m,{})
call=lambda t,a: rpc("tools/call",{"name":t,"arguments":a})
s=call("unidades_detenidas",{"minutos_minimos":0})
inst=s["result"]["structuredContent"]["instante_consulta"]
today=datetime.date.fromisoformat(inst[:10])
r=call("reporte_kilometraje",{"fecha_inicio":str(today-datetime.timedelta(days=6)),"fecha_fin":"hoy"})
plates=[u["placa"] for u in r["result"]["structuredContent"]["ranking"]]
y=str(today-datetime.timedelta(days=1))
call("posicion_actual",{"placa":plates[0]}); call("posicion_actual",{})
call("alertas",{"fecha_inicio":str(today-datetime.timedelta(days=6)),"fecha_fin":"hoy"})
call("resumen_recorrido",{"placa":plates[0],"fecha":y})
call("verificar_geocerca",{"placa":plates[0],"fecha":y,"geocerca":"CEDIS"})
call("posicion_actual",{"placa":"NOEXISTE"})
drawn=0;i=0
while drawn<nmaps and i<nmaps*10:
    pl=plates[i%len(plates)]; day=today-datetime.timedelta(days=1+(i//len(plates))%7); i+=1
    a=call("mapa_flota",{}) if drawn%10==9 else call("mapa_recorrido",{"placa":pl,"fecha":str(day)})
    if a["result"].get("isError"): continue
    drawn+=1
p.stdin.close(); p.wait()
