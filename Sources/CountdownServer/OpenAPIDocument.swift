// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
// Generated from docs/openapi.yaml by Tests/openapi/generate.py: edit the YAML and run it.
// swift-format-ignore-file

/// The HTTP API's OpenAPI 3.1 document (docs/openapi.yaml) as JSON, served at
/// `GET /openapi.json`.
enum OpenAPIDocument {
  static let json = ####"""
  {"openapi":"3.1.0","info":{"title":"Countdown HTTP API","version":"1","summary":"Live Activity t\####
  imers for Linux, over HTTP (`countdown serve --http HOST:PORT`).","description":"The same engine\####
   as the socket protocol (docs/protocol.md), over HTTP (docs/http.md).\nInstants are milliseconds\####
   since 1970 (UTC); durations are milliseconds. Every error is\n`{\"code\",\"message\"}` (docs/er\####
  rors.md) and changes nothing. A server given `--token`\nneeds `Authorization: Bearer TOKEN` on e\####
  very request (or `?token=` for the board page);\na server on loopback without a token needs none\####
  .\n","license":{"name":"Apache-2.0"}},"servers":[{"url":"http://127.0.0.1:8080"}],"security":[{}\####
  ,{"bearer":[]}],"tags":[{"name":"activities"},{"name":"events"},{"name":"board"},{"name":"servic\####
  e"}],"paths":{"/":{"get":{"tags":["board"],"operationId":"board","summary":"The kiosk board page\####
   (HTML, CSS and JavaScript built into the binary).","parameters":[{"name":"controls","in":"query\####
  ","description":"`0` shows no buttons (a screen facing the public), `1` pause, resume and end; e\####
  lse the server's `--board-controls`.","schema":{"type":"string","enum":["0","1"]}},{"$ref":"#/co\####
  mponents/parameters/QueryToken"}],"responses":{"200":{"description":"The page.","content":{"text\####
  /html":{"schema":{"type":"string"}}}},"400":{"$ref":"#/components/responses/BadRequest"},"defaul\####
  t":{"$ref":"#/components/responses/Error"}}}},"/v1/activities":{"get":{"tags":["activities"],"op\####
  erationId":"listActivities","summary":"Every activity, the k soonest ending, or those ended with\####
  in a window.","parameters":[{"name":"soonest","in":"query","description":"The k running countdow\####
  ns that end soonest.","schema":{"type":"integer","minimum":0}},{"name":"endedWithinMs","in":"que\####
  ry","description":"The activities ended within the last w milliseconds.","schema":{"type":"integ\####
  er","minimum":0}},{"$ref":"#/components/parameters/Group"}],"responses":{"200":{"description":"T\####
  he activities at `at`.","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Li\####
  sting"}}}},"400":{"$ref":"#/components/responses/BadRequest"},"default":{"$ref":"#/components/re\####
  sponses/Error"}}},"post":{"tags":["activities"],"operationId":"startActivity","summary":"Starts \####
  an activity (the socket's `start` without `op` and `at`).","requestBody":{"required":true,"conte\####
  nt":{"application/json":{"schema":{"$ref":"#/components/schemas/StartRequest"}}}},"responses":{"\####
  201":{"description":"The activity, started.","content":{"application/json":{"schema":{"$ref":"#/\####
  components/schemas/Activity"}}}},"400":{"$ref":"#/components/responses/BadRequest"},"409":{"$ref\####
  ":"#/components/responses/Conflict"},"413":{"$ref":"#/components/responses/TooLarge"},"429":{"$r\####
  ef":"#/components/responses/LimitReached"},"503":{"$ref":"#/components/responses/Unavailable"},"\####
  default":{"$ref":"#/components/responses/Error"}}}},"/v1/activities/{id}":{"parameters":[{"$ref"\####
  :"#/components/parameters/ActivityID"}],"get":{"tags":["activities"],"operationId":"getActivity"\####
  ,"summary":"One activity as it stands now.","responses":{"200":{"description":"The activity.","c\####
  ontent":{"application/json":{"schema":{"$ref":"#/components/schemas/Activity"}}}},"400":{"$ref":\####
  "#/components/responses/BadRequest"},"404":{"$ref":"#/components/responses/NotFound"},"default":\####
  {"$ref":"#/components/responses/Error"}}},"patch":{"tags":["activities"],"operationId":"updateAc\####
  tivity","summary":"Updates an activity (a JSON Merge Patch of its content, dates, milestones, `l\####
  iveActivity`).","requestBody":{"required":true,"content":{"application/json":{"schema":{"$ref":"\####
  #/components/schemas/UpdateRequest"}},"application/merge-patch+json":{"schema":{"$ref":"#/compon\####
  ents/schemas/UpdateRequest"}}}},"responses":{"200":{"description":"The activity, updated.","cont\####
  ent":{"application/json":{"schema":{"$ref":"#/components/schemas/Activity"}}}},"400":{"$ref":"#/\####
  components/responses/BadRequest"},"404":{"$ref":"#/components/responses/NotFound"},"409":{"$ref"\####
  :"#/components/responses/Conflict"},"413":{"$ref":"#/components/responses/TooLarge"},"503":{"$re\####
  f":"#/components/responses/Unavailable"},"default":{"$ref":"#/components/responses/Error"}}}},"/\####
  v1/activities/{id}/pause":{"parameters":[{"$ref":"#/components/parameters/ActivityID"}],"post":{\####
  "tags":["activities"],"operationId":"pauseActivity","summary":"Pauses a running activity; its va\####
  lue freezes.","requestBody":{"required":false,"content":{"application/json":{"schema":{"$ref":"#\####
  /components/schemas/PauseRequest"}}}},"responses":{"200":{"description":"The activity, paused (p\####
  ausing a paused one changes nothing).","content":{"application/json":{"schema":{"$ref":"#/compon\####
  ents/schemas/Activity"}}}},"400":{"$ref":"#/components/responses/BadRequest"},"404":{"$ref":"#/c\####
  omponents/responses/NotFound"},"409":{"$ref":"#/components/responses/Conflict"},"503":{"$ref":"#\####
  /components/responses/Unavailable"},"default":{"$ref":"#/components/responses/Error"}}}},"/v1/ac\####
  tivities/{id}/resume":{"parameters":[{"$ref":"#/components/parameters/ActivityID"}],"post":{"tag\####
  s":["activities"],"operationId":"resumeActivity","summary":"Resumes a paused activity.","request\####
  Body":{"required":false,"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Pa\####
  useRequest"}}}},"responses":{"200":{"description":"The activity, running.","content":{"applicati\####
  on/json":{"schema":{"$ref":"#/components/schemas/Activity"}}}},"400":{"$ref":"#/components/respo\####
  nses/BadRequest"},"404":{"$ref":"#/components/responses/NotFound"},"409":{"$ref":"#/components/r\####
  esponses/Conflict"},"503":{"$ref":"#/components/responses/Unavailable"},"default":{"$ref":"#/com\####
  ponents/responses/Error"}}}},"/v1/activities/{id}/end":{"parameters":[{"$ref":"#/components/para\####
  meters/ActivityID"}],"post":{"tags":["activities"],"operationId":"endActivity","summary":"Ends a\####
  n activity, with its dismissal and final content.","requestBody":{"required":false,"content":{"a\####
  pplication/json":{"schema":{"$ref":"#/components/schemas/EndRequest"}}}},"responses":{"200":{"de\####
  scription":"The activity as it stands once ended (even when dismissed at once).","content":{"app\####
  lication/json":{"schema":{"$ref":"#/components/schemas/Activity"}}}},"400":{"$ref":"#/components\####
  /responses/BadRequest"},"404":{"$ref":"#/components/responses/NotFound"},"409":{"$ref":"#/compon\####
  ents/responses/Conflict"},"413":{"$ref":"#/components/responses/TooLarge"},"503":{"$ref":"#/comp\####
  onents/responses/Unavailable"},"default":{"$ref":"#/components/responses/Error"}}}},"/v1/events"\####
  :{"get":{"tags":["events"],"operationId":"events","summary":"A Server-Sent Events stream: `snaps\####
  hot`, then each event (docs/events.md).","parameters":[{"name":"ticks","in":"query","description\####
  ":"`1` or `true`: ticks too; `0` or `false`: lifecycle events only (the default).","schema":{"ty\####
  pe":"string","enum":["0","1","true","false"]}},{"name":"ids","in":"query","description":"Only th\####
  ese activities (comma-separated ids); without it, every activity, those started later too.","sch\####
  ema":{"type":"string"}},{"$ref":"#/components/parameters/Group"},{"$ref":"#/components/parameter\####
  s/QueryToken"}],"responses":{"200":{"description":"`retry: 1000`, then `event: snapshot` with `d\####
  ata:` `{\"at\":…,\"activities\":[…]}`,\nthen each event as `event: NAME` and `data:` its JSON ob\####
  ject; a `: keep-alive`\ncomment every 15 s. The stream ends when the server stops.\n","content":\####
  {"text/event-stream":{"schema":{"type":"string"}}}},"400":{"$ref":"#/components/responses/BadReq\####
  uest"},"503":{"$ref":"#/components/responses/Unavailable"},"default":{"$ref":"#/components/respo\####
  nses/Error"}}}},"/v1/time":{"get":{"tags":["service"],"operationId":"time","summary":"The server\####
  's clock (the board reads it to show each second when it begins).","responses":{"200":{"descript\####
  ion":"Now, by the server's clock.","content":{"application/json":{"schema":{"type":"object","req\####
  uired":["now"],"properties":{"now":{"$ref":"#/components/schemas/Instant"}}}}}},"default":{"$ref\####
  ":"#/components/responses/Error"}}}},"/v1/cluster":{"get":{"tags":["service"],"operationId":"clu\####
  ster","summary":"The cluster as this node sees it (docs/cluster.md); a single server has no node\####
  , nodes or shards.","responses":{"200":{"description":"The nodes, and each shard's owner (null w\####
  hile no live lease holds it) and epoch, as last read from PostgreSQL.","content":{"application/j\####
  son":{"schema":{"type":"object","required":["node","nodes","shards"],"properties":{"node":{"type\####
  ":["string","null"]},"nodes":{"type":"array","items":{"type":"object","required":["name","advert\####
  ise","alive"],"properties":{"name":{"type":"string"},"advertise":{"type":["string","null"]},"ali\####
  ve":{"type":"boolean"}}}},"shards":{"type":"array","items":{"type":"object","required":["shard",\####
  "owner","epoch"],"properties":{"shard":{"type":"integer","minimum":0},"owner":{"type":["string",\####
  "null"]},"epoch":{"type":"integer"},"unrestorable":{"type":"string","description":"Present when \####
  this node holds the shard and its rows cannot be restored; why."}}}}}}}}},"default":{"$ref":"#/c\####
  omponents/responses/Error"}}}},"/metrics":{"get":{"tags":["service"],"operationId":"metrics","su\####
  mmary":"Prometheus text (docs/http.md, \"Metrics\").","responses":{"200":{"description":"The met\####
  rics.","content":{"text/plain":{"schema":{"type":"string"}}}},"default":{"$ref":"#/components/re\####
  sponses/Error"}}}},"/openapi.json":{"get":{"tags":["service"],"operationId":"openapi","summary":\####
  "This document, as JSON.","responses":{"200":{"description":"The OpenAPI document.","content":{"\####
  application/json":{"schema":{"type":"object"}}}},"default":{"$ref":"#/components/responses/Error\####
  "}}}}},"components":{"securitySchemes":{"bearer":{"type":"http","scheme":"bearer","description":\####
  "The server's `--token` (or `--token-file`, `COUNTDOWN_TOKEN`)."}},"parameters":{"ActivityID":{"\####
  name":"id","in":"path","required":true,"description":"The activity's id (percent-encoded in the \####
  path).","schema":{"type":"string","minLength":1,"maxLength":128}},"QueryToken":{"name":"token","\####
  in":"query","description":"The token, for a browser that cannot send a header (the board and its\####
   event stream).","schema":{"type":"string"}},"Group":{"name":"group","in":"query","description":\####
  "Only this group's activities (docs/security.md, \"Groups\"); a key with groups sees only its ow\####
  n whatever this says.","schema":{"$ref":"#/components/schemas/GroupName"}}},"responses":{"BadReq\####
  uest":{"description":"`invalidPayload`, `invalidDate` or `outOfOrder`: the message names the fie\####
  ld.","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Error"}}}},"NotFound"\####
  :{"description":"`notFound`: no activity has that id (never, or dismissed).","content":{"applica\####
  tion/json":{"schema":{"$ref":"#/components/schemas/Error"}}}},"Conflict":{"description":"`duplic\####
  ateID` or `activityEnded`.","content":{"application/json":{"schema":{"$ref":"#/components/schema\####
  s/Error"}}}},"TooLarge":{"description":"`attributesTooLarge`: content over 4096 bytes, or a body\####
   over 64 KiB.","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Error"}}}},\####
  "LimitReached":{"description":"`limitReached`: `maxActivities` activities exist.","content":{"ap\####
  plication/json":{"schema":{"$ref":"#/components/schemas/Error"}}}},"Unavailable":{"description":\####
  "`disabled`, `storageFailed` (try again), `shutdown`, or `unavailable` (a cluster node that does\####
   not serve the activity's shard now).","content":{"application/json":{"schema":{"$ref":"#/compon\####
  ents/schemas/Error"}}}},"Error":{"description":"Any other error: 401 `unauthorized`, 403 `forbid\####
  den`, 404 (no such route), 405 (another method; with `Allow`), 413, 421 `misdirected`, 429, 503.\####
  ","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Error"}}}}},"schemas":{"\####
  Instant":{"type":"integer","description":"Milliseconds since 1970 (UTC), from 100000000000 to th\####
  e end of the year 9999.","minimum":100000000000,"maximum":253402300799999},"Error":{"type":"obje\####
  ct","required":["code","message"],"properties":{"code":{"type":"string","enum":["invalidPayload"\####
  ,"invalidDate","outOfOrder","timeWentBackwards","lineTooLong","unauthorized","forbidden","notFou\####
  nd","misdirected","duplicateID","activityEnded","attributesTooLarge","limitReached","disabled","\####
  storageFailed","shutdown","unavailable","slowConsumer","systemError"]},"message":{"type":"string\####
  "}}},"Listing":{"type":"object","required":["at","activities"],"properties":{"at":{"$ref":"#/com\####
  ponents/schemas/Instant"},"servedShards":{"type":"array","description":"A cluster node without -\####
  -cluster-token lists only the shards it serves, and names them here (docs/cluster.md).","items":\####
  {"type":"integer","minimum":0}},"activities":{"type":"array","items":{"$ref":"#/components/schem\####
  as/Activity"}}}},"Content":{"type":"object","description":"What an activity shows (docs/activiti\####
  es.md); its canonical JSON is at most 4096 bytes.","properties":{"title":{"type":"string"},"subt\####
  itle":{"type":"string"},"alertMessage":{"type":"string"},"color":{"type":"string","pattern":"^#(\####
  [0-9A-Fa-f]{6}|[0-9A-Fa-f]{8})$"},"fields":{"type":"object"},"relevance":{"type":"number"}}},"Mi\####
  lestone":{"type":"object","additionalProperties":false,"required":["name","atMs"],"properties":{\####
  "name":{"type":"string"},"atMs":{"type":"integer","description":"For a countdown, milliseconds b\####
  efore its end (negative with overtime, after it); for an elapsed timer, elapsed milliseconds."},\####
  "content":{"type":"object","description":"A merge patch of the content, applied at the milestone\####
  's instant."}}},"LiveActivity":{"type":"object","additionalProperties":false,"description":"The \####
  iPhone Live Activity it drives (docs/pushes.md).","properties":{"pushTokens":{"type":"object","a\####
  dditionalProperties":{"type":["boolean","null"]}},"startTokens":{"type":"object","additionalProp\####
  erties":{"type":["boolean","null"]}},"attributesType":{"type":"string"},"attributes":{"type":"ob\####
  ject"},"keys":{"type":"object","additionalProperties":{"type":"string"}},"dateEncoding":{"type":\####
  "string","enum":["reference","unix","unixMs","iso8601"]},"priority":{"type":"integer","enum":[5,\####
  10]},"sound":{"type":["string","null"],"minLength":1,"description":"`aps.alert.sound` of the pus\####
  hes that carry an alert: a sound file of the app, or `default`."},"channel":{"type":["string","n\####
  ull"],"pattern":"^(create|[A-Za-z0-9+/]+={0,2})$","description":"A broadcast channel (iOS 18, `-\####
  -apns-channels`): `create` (the server makes one through APNs's channel management API) or a cha\####
  nnel id the caller made (base64). Given at the start only (docs/pushes.md, \"Broadcast channels\\####
  ")."},"channelId":{"type":["string","null"],"readOnly":true,"description":"The channel the activ\####
  ity's updates and end are broadcast on: the caller's id, or the one APNs made (null until it has\####
   answered). Set by the server; the app's backend hands it to the phones (`pushType: .channel(id)\####
  `)."}}},"Dismissal":{"description":"`immediate`, `default` (four hours after the end) or `{\"aft\####
  er\": instant}`.","oneOf":[{"type":"string","enum":["immediate","default"]},{"type":"object","re\####
  quired":["after"],"additionalProperties":false,"properties":{"after":{"$ref":"#/components/schem\####
  as/Instant"}}}]},"StartRequest":{"type":"object","additionalProperties":false,"required":["kind"\####
  ,"title"],"properties":{"id":{"type":"string","minLength":1,"maxLength":128},"kind":{"type":"str\####
  ing","enum":["countdown","elapsed"]},"endDate":{"$ref":"#/components/schemas/Instant"},"startDat\####
  e":{"$ref":"#/components/schemas/Instant"},"goalMs":{"type":"integer","minimum":0},"title":{"typ\####
  e":"string"},"subtitle":{"type":"string"},"alertMessage":{"type":"string"},"color":{"type":"stri\####
  ng","pattern":"^#([0-9A-Fa-f]{6}|[0-9A-Fa-f]{8})$"},"fields":{"type":"object"},"relevance":{"typ\####
  e":"number"},"staleDate":{"$ref":"#/components/schemas/Instant"},"milestones":{"type":"array","i\####
  tems":{"$ref":"#/components/schemas/Milestone"}},"endOnExpiry":{"$ref":"#/components/schemas/Dis\####
  missal"},"overtime":{"type":"boolean"},"liveActivity":{"$ref":"#/components/schemas/LiveActivity\####
  "},"group":{"$ref":"#/components/schemas/GroupName","description":"Fixed at start; a key with gr\####
  oups must name one of its own (docs/security.md, \"Groups\")."}}},"GroupName":{"type":"string","\####
  pattern":"^[A-Za-z0-9._-]{1,64}$"},"UpdateRequest":{"type":"object","additionalProperties":false\####
  ,"description":"A merge patch; `null` removes a member where the member may be absent.","propert\####
  ies":{"title":{"type":"string"},"subtitle":{"type":["string","null"]},"alertMessage":{"type":["s\####
  tring","null"]},"color":{"oneOf":[{"type":"string","pattern":"^#([0-9A-Fa-f]{6}|[0-9A-Fa-f]{8})$\####
  "},{"type":"null"}]},"fields":{"type":["object","null"]},"relevance":{"type":["number","null"]},\####
  "endDate":{"$ref":"#/components/schemas/Instant"},"startDate":{"$ref":"#/components/schemas/Inst\####
  ant"},"staleDate":{"oneOf":[{"$ref":"#/components/schemas/Instant"},{"type":"null"}]},"milestone\####
  s":{"type":"array","items":{"$ref":"#/components/schemas/Milestone"}},"endOnExpiry":{"oneOf":[{"\####
  $ref":"#/components/schemas/Dismissal"},{"type":"null"}]},"overtime":{"type":"boolean"},"timesta\####
  mp":{"$ref":"#/components/schemas/Instant"},"liveActivity":{"oneOf":[{"$ref":"#/components/schem\####
  as/LiveActivity"},{"type":"null"}]}}},"PauseRequest":{"type":"object","additionalProperties":fal\####
  se,"properties":{"timestamp":{"$ref":"#/components/schemas/Instant"}}},"EndRequest":{"type":"obj\####
  ect","additionalProperties":false,"properties":{"dismissal":{"$ref":"#/components/schemas/Dismis\####
  sal"},"timestamp":{"$ref":"#/components/schemas/Instant"},"title":{"type":"string"},"subtitle":{\####
  "type":["string","null"]},"alertMessage":{"type":["string","null"]},"color":{"oneOf":[{"type":"s\####
  tring","pattern":"^#([0-9A-Fa-f]{6}|[0-9A-Fa-f]{8})$"},{"type":"null"}]},"fields":{"type":["obje\####
  ct","null"]},"relevance":{"type":["number","null"]}}},"Activity":{"type":"object","description":\####
  "An activity object (docs/protocol.md, \"Activity objects\").","required":["id","kind","phase","\####
  value","text","progress","stale","overtime","content","endDate","startDate","pausedAt","goalMs",\####
  "milestone","nextMilestone","liveActivity","group"],"properties":{"id":{"type":"string"},"kind":\####
  {"type":"string","enum":["countdown","elapsed"]},"phase":{"type":"string","enum":["active","paus\####
  ed","ended"]},"value":{"type":"integer","description":"The whole seconds shown (negative past th\####
  e end of a countdown in overtime)."},"text":{"type":"string","description":"The value in the ser\####
  ver's `--style`."},"progress":{"type":["number","null"],"minimum":0,"maximum":1},"stale":{"type"\####
  :"boolean"},"overtime":{"type":"boolean"},"content":{"$ref":"#/components/schemas/Content"},"end\####
  Date":{"oneOf":[{"$ref":"#/components/schemas/Instant"},{"type":"null"}]},"startDate":{"oneOf":[\####
  {"$ref":"#/components/schemas/Instant"},{"type":"null"}]},"pausedAt":{"oneOf":[{"$ref":"#/compon\####
  ents/schemas/Instant"},{"type":"null"}]},"goalMs":{"type":["integer","null"]},"milestone":{"type\####
  ":["string","null"]},"nextMilestone":{"oneOf":[{"type":"object","required":["name","at"],"proper\####
  ties":{"name":{"type":"string"},"at":{"type":"integer"}}},{"type":"null"}]},"liveActivity":{"one\####
  Of":[{"$ref":"#/components/schemas/LiveActivity"},{"type":"null"}]},"group":{"oneOf":[{"$ref":"#\####
  /components/schemas/GroupName"},{"type":"null"}]},"shard":{"type":"integer","minimum":0,"descrip\####
  tion":"The activity's shard; only from a cluster node (docs/cluster.md)."}}}}}}
  """####
}
