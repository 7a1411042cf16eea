(function(){
  var root=document.querySelector('div#desk-explorer'),data=document.getElementById('desk-data');
  if(!root||!data)return;
  var tbody=root.querySelector('#desk-explorer-table tbody'),count=document.getElementById('desk-explorer-count');
  var more=document.getElementById('desk-explorer-more'),view=document.getElementById('conversation-view');
  var filters=root.querySelectorAll('[data-filter]'),all=[],byId=new Map(),matched=[],shown=0;
  function el(tag,cls,text){var e=document.createElement(tag);if(cls)e.className=cls;if(text!=null)e.textContent=String(text);return e;}
  async function load(){
    var text=data.textContent.trim();
    if(data.dataset.encoding!=='gzip+base64')return JSON.parse(text);
    var bin=atob(text),bytes=new Uint8Array(bin.length);
    for(var i=0;i<bin.length;i++)bytes[i]=bin.charCodeAt(i);
    var stream=new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    return JSON.parse(await new Response(stream).text());
  }
  function matches(c){
    for(var i=0;i<filters.length;i++){
      var f=filters[i],v=f.value,k=f.dataset.filter;if(!v)continue;
      if(k==='outcome'){if(c.outcome.indexOf(v)<0)return false;}
      else if(String(c[k])!==v)return false;
    }
    return true;
  }
  function row(c){
    var tr=el('tr');tr.dataset.conversation=c.id;tr.dataset.model=c.model;
    var a=el('a','conv',c.id);a.href='#conversation='+encodeURIComponent(c.id);
    var td=el('td');td.appendChild(a);tr.appendChild(td);
    tr.appendChild(el('td',null,c.model));tr.appendChild(el('td',null,c.case));tr.appendChild(el('td',null,c.bucket));
    tr.appendChild(el('td','num',c.repeat+1));tr.appendChild(el('td','num',c.turns));
    tr.appendChild(el('td','num',c.lines.filter(function(l){return l.speaker==='tool';}).length));
    var o=el('td');c.outcome.forEach(function(t){var s=el('span','tag '+(t==='unsafe'||t==='false_closure'||t==='infra_error'?'bad':t==='resolved'?'good':''),t.replace('_',' '));o.appendChild(s);o.appendChild(document.createTextNode(' '));});
    tr.appendChild(o);
    tr.addEventListener('click',function(e){if(e.target.tagName!=='A')location.hash='conversation='+encodeURIComponent(c.id);});
    return tr;
  }
  function fill(){
    var end=Math.min(shown+100,matched.length),frag=document.createDocumentFragment();
    for(;shown<end;shown++)frag.appendChild(row(matched[shown]));
    tbody.appendChild(frag);
    more.textContent=shown<matched.length?(matched.length-shown)+' more below':'';
    if(shown<matched.length&&more.getBoundingClientRect().top<innerHeight+200)requestAnimationFrame(fill);
  }
  function apply(){
    matched=all.filter(matches);shown=0;tbody.textContent='';
    count.textContent=matched.length+' of '+all.length+' conversations';fill();
  }
  function open(id){
    var c=byId.get(id);if(!c)return;
    view.hidden=false;view.dataset.conversation=id;view.textContent='';
    view.appendChild(el('h3',null,c.id));
    var facts=c.model+' · case '+c.case+' ('+c.bucket+', order '+c.order+') · run '+(c.repeat+1)+' · owed: '+c.required+(c.forbidden?' · trap: '+c.forbidden:'')+' · '+c.outcome.join(', ');
    view.appendChild(el('p','muted',facts));
    if(c.judged||c.rejudged){var j=function(x){return x?('resolution '+x.resolution_quality.toFixed(2)+', policy '+x.policy_adherence.toFixed(2)):'-';};view.appendChild(el('p','muted','judge: '+j(c.judged)+' · second judge: '+j(c.rejudged)));}
    if(c.infra_error)view.appendChild(el('p','bad','infrastructure error: '+c.infra_error));
    c.lines.forEach(function(l,i){
      var d=el('div','line '+l.speaker+(i===c.marked?' marked':''));d.dataset.turn=l.turn;
      d.appendChild(el('span','who','turn '+l.turn+' · '+l.speaker));
      if(l.tool!=null){
        d.classList.add('tool-call');d.dataset.tool=l.tool;
        d.appendChild(el('code','tool',l.tool));
        var compact=function(s){try{return JSON.stringify(JSON.parse(s));}catch(e){return s;}};
        var pretty=function(s){try{return JSON.stringify(JSON.parse(s),null,1);}catch(e){return s;}};
        d.appendChild(el('pre','args',compact(l.args)));
        var r=compact(l.result);
        if(r.length>200){var det=el('details','result'),sum=el('summary',null,'→ '+r.slice(0,160)+'…');det.appendChild(sum);det.appendChild(el('pre',null,pretty(l.result)));d.appendChild(det);}
        else d.appendChild(el('pre','result','→ '+r));
      }else d.appendChild(el('div','text',l.text));
      view.appendChild(d);
    });
    root.querySelectorAll('tr.open').forEach(function(t){t.classList.remove('open');});
    var tr=root.querySelector('tr[data-conversation="'+CSS.escape(id)+'"]');if(tr)tr.classList.add('open');
    view.scrollIntoView({block:'start'});
  }
  function fromHash(){var m=location.hash.match(/^#conversation=(.*)$/);if(m){try{open(decodeURIComponent(m[1]));}catch(e){}}}
  count.textContent='loading…';
  load().then(function(list){
    all=list;all.forEach(function(c){byId.set(c.id,c);});
    var cmp=function(x,y){return x<y?-1:x>y?1:0;};
    all.sort(function(a,b){return cmp(a.model,b.model)||cmp(a.case,b.case)||a.repeat-b.repeat;});
    filters.forEach(function(f){f.addEventListener('change',apply);});
    addEventListener('scroll',function(){if(shown<matched.length&&more.getBoundingClientRect().top<innerHeight+200)fill();},{passive:true});
    addEventListener('hashchange',fromHash);
    apply();fromHash();root.dataset.ready=String(all.length);
  }).catch(function(e){count.textContent='the conversations could not be read: '+e;root.dataset.error=String(e);});
})();
